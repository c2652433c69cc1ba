/**
 * The results file: JSONL, one line per finished task (the `run --output-format json` object plus
 * `task_id` and `sandbox_start_ms`), appended with one write per line as each task ends, so a crash or
 * Ctrl-C leaves every line before it whole. A task run again appends a new line: the last one wins.
 */
import { existsSync, readFileSync } from "node:fs";
import { basename, dirname } from "node:path";
import { type HostFile, openHostFile } from "../host-files/host-file.js";
import { type HostDir, openHostDir } from "../host-files/host-path.js";
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

/**
 * Appends results to one file, held open from the first result on and never reached through a
 * link (host-files/): a results file inside a task's workspace is the sandbox's to swap. A last line
 * cut off by an earlier crash is ended first. Throws `HostPathError` when the file is refused.
 */
export class ResultsWriter {
  #open: { dir: HostDir; file: HostFile } | undefined;

  constructor(readonly path: string) {}

  append(result: BatchResult): void {
    this.#open ??= this.#openFile();
    // One write per line: a line is whole or absent, whatever happens next.
    this.#open.file.write(`${JSON.stringify(scrubSecrets(result))}\n`);
  }

  /** Closes the file; a later `append` opens it again. */
  close(): void {
    this.#open?.file.close();
    this.#open?.dir.close();
    this.#open = undefined;
  }

  #openFile(): { dir: HostDir; file: HostFile } {
    // The directory stays open with the file: `write` checks the file's name through it.
    const dir = openHostDir(dirname(this.path), 0o700);
    try {
      const file = openHostFile(dir, basename(this.path), { mode: 0o600, append: true, read: true });
      const last = file.readTail(1);
      if (last.length > 0 && last[0] !== 0x0a) file.write("\n");
      return { dir, file };
    } catch (error) {
      dir.close();
      throw error;
    }
  }
}
