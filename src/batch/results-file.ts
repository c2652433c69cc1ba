/**
 * The results file: JSONL, one line per finished task (the `run --output-format json` object plus
 * `task_id` and `sandbox_start_ms`), appended with one write per line as each task ends, so a crash or
 * Ctrl-C leaves every line before it whole. A task run again appends a new line: the last one wins.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import type { ResultMessage } from "../output/result-summary.js";
import { scrubSecrets } from "../transcript/transcript.js";

/** One line of the results file. */
export interface BatchResult extends ResultMessage {
  /** The task's id from the tasks file. */
  task_id: string;
  /** Time to open the task's sandbox, in ms; null when it did not open. */
  sandbox_start_ms: number | null;
}

/** `--retry`: which recorded results run again besides the unrecorded and the canceled ones. */
export type RetryMode = "none" | "failed" | "errors";

/** What a results file holds. */
export interface RecordedResults {
  /** The last result recorded per task id. */
  byId: Map<string, BatchResult>;
  /** Lines that were not a result (a line cut off by a hard kill); they are skipped. */
  unreadable: number;
}

export function readResults(path: string): RecordedResults {
  const byId = new Map<string, BatchResult>();
  let unreadable = 0;
  if (!existsSync(path)) return { byId, unreadable };
  for (const line of readFileSync(path, "utf8").split("\n")) {
    if (line.trim() === "") continue;
    try {
      const value = JSON.parse(line) as Partial<BatchResult>;
      if (typeof value.task_id !== "string" || value.type !== "result") throw new Error("not a result");
      byId.set(value.task_id, value as BatchResult);
    } catch {
      unreadable += 1;
    }
  }
  return { byId, unreadable };
}

/**
 * Whether a task runs (again): never recorded, canceled (an interrupted batch), or matching `retry`
 * ("failed": every result but a success; "errors": status "error", Docker or the API).
 */
export function needsRun(recorded: BatchResult | undefined, retry: RetryMode): boolean {
  if (recorded === undefined || recorded.status === "canceled") return true;
  if (retry === "failed") return recorded.is_error;
  if (retry === "errors") return recorded.status === "error";
  return false;
}

/** Appends results to one file; a last line cut off by an earlier crash is ended first. */
export class ResultsWriter {
  #started = false;

  constructor(readonly path: string) {}

  append(result: BatchResult): void {
    if (!this.#started) {
      mkdirSync(dirname(this.path), { recursive: true });
      if (existsSync(this.path)) {
        const text = readFileSync(this.path, "utf8");
        if (text !== "" && !text.endsWith("\n")) appendFileSync(this.path, "\n");
      }
      this.#started = true;
    }
    // One synchronous write per line: a line is whole or absent, whatever happens next.
    appendFileSync(this.path, `${JSON.stringify(scrubSecrets(result))}\n`, { mode: 0o600 });
  }
}
