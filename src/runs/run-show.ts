/**
 * One run's steps, readable: its task, each command (an editor call as its command, path and edit:
 * show-steps.ts) with its exit code and what was noted about it, what the model said, each edit that
 * kept the conversation within the window, how it ended and its final text. The transcript is streamed line by line, so
 * a big one is never held whole. Every piece of text in it came from the model or a command, so it is
 * shown with its control characters as escapes (sanitizeForTerminal); a damaged line is named and skipped.
 */
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import type { TokenUsage } from "../model/model-client.js";
import { costUsd, formatUsd, resolvePricing } from "../model/pricing.js";
import type {
  AssistantRecord,
  CheckpointRecord,
  ContextRecord,
  RunEndRecord,
  RunStartRecord,
  ToolCallRecord,
  ToolResultRanRecord,
  TranscriptRecord,
  UncheckedRecord,
} from "../transcript/transcript-records.js";
import { tryTranscriptRow } from "../transcript/transcript-rows.js";
import {
  callHead,
  contextLine,
  editorOutcome,
  firstLine,
  INDENT,
  oneLine,
  type ShownCall,
  safe,
  withheldLines,
} from "./show-steps.js";

export interface ShowOptions {
  /** Env for HARNESS_PRICE_* (cost). Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Most lines of one model text or final text shown. Default 12. */
  maxTextLines?: number;
}

type Row = UncheckedRecord<TranscriptRecord> & { type?: unknown } & Record<string, unknown>;

const MAX_BAD_LINES = 3;

/** The lines that show the transcript at `path`. Rejects only when the file cannot be opened. */
export async function* formatRun(path: string, options: ShowOptions = {}): AsyncGenerator<string> {
  const state = new ShowState(options);
  const stream = createReadStream(path, { encoding: "utf8" });
  // Opening errors (ENOENT, EACCES) surface before any line.
  await new Promise<void>((resolve, reject) => {
    stream.once("open", () => resolve());
    stream.once("error", reject);
  });
  let lastLineEnded = true;
  let lineNumber = 0;
  stream.on("data", (chunk) => {
    if (chunk.length > 0) lastLineEnded = chunk.toString().endsWith("\n");
  });
  for await (const raw of createInterface({ input: stream, crlfDelay: Number.POSITIVE_INFINITY })) {
    lineNumber += 1;
    if (raw.trim() === "") continue;
    yield* state.line(raw, lineNumber);
  }
  yield* state.end(lastLineEnded);
}

/** Walks the records in order; each method returns the lines it shows. */
class ShowState {
  private readonly maxTextLines: number;
  private readonly env: NodeJS.ProcessEnv;
  private prompts = 0;
  private steps = 0;
  private badLines = 0;
  private task: string | undefined;
  private model: string | undefined;
  private ended = true;
  private readonly calls = new Map<string, ShownCall>();

  constructor(options: ShowOptions) {
    this.maxTextLines = options.maxTextLines ?? 12;
    this.env = options.env ?? process.env;
  }

  line(raw: string, lineNumber: number): string[] {
    const row: Row | undefined = tryTranscriptRow(raw);
    if (row === undefined) {
      this.badLines += 1;
      if (this.badLines > MAX_BAD_LINES) return [];
      return [`line ${lineNumber}: not a transcript record (skipped)`];
    }
    switch (row.type) {
      case "run_start":
        return this.runStart(row as UncheckedRecord<RunStartRecord> & { workspace?: unknown });
      case "user":
        return typeof row["text"] === "string" && row["text"] !== this.task
          ? [`user: ${oneLine(row["text"])}`]
          : [];
      case "assistant":
        return this.assistant(row as UncheckedRecord<AssistantRecord>);
      case "tool_call":
        return this.toolCall(row as UncheckedRecord<ToolCallRecord>);
      case "tool_result":
        return this.toolResult(row as UncheckedRecord<ToolResultRanRecord>);
      case "notice":
        return typeof row["text"] === "string" ? [`note: ${oneLine(row["text"])}`] : [];
      case "checkpoint":
        return this.checkpoint(row as UncheckedRecord<CheckpointRecord>);
      case "context":
        return contextLine(row as UncheckedRecord<ContextRecord> & Record<string, unknown>);
      case "run_end":
        return this.runEnd(row as UncheckedRecord<RunEndRecord>);
      default:
        return [];
    }
  }

  end(lastLineEnded: boolean): string[] {
    const lines: string[] = [];
    for (const call of this.calls.values()) {
      lines.push(...callHead(call), `${INDENT}no result recorded (the run stopped here)`);
    }
    if (this.badLines > MAX_BAD_LINES)
      lines.push(`(${this.badLines - MAX_BAD_LINES} more damaged lines skipped)`);
    if (this.prompts === 0) lines.push("no run_start record: this is not a harness transcript");
    else if (!this.ended)
      lines.push("", "not ended: no run_end record (still running, or harness was killed)");
    if (!lastLineEnded) lines.push("(the transcript ends mid-record: its writer was stopped)");
    return lines;
  }

  private runStart(row: UncheckedRecord<RunStartRecord> & { workspace?: unknown }): string[] {
    this.prompts += 1;
    this.ended = false;
    this.task = typeof row.task === "string" ? row.task : undefined;
    const time = typeof row.time === "string" ? shownTime(row.time) : "?";
    const lines = this.prompts === 1 ? [`started    ${time}`] : ["", `prompt ${this.prompts}, ${time}`];
    if (this.prompts === 1 && typeof row.workspace === "string")
      lines.push(`workspace  ${safe(row.workspace)}`);
    lines.push("task", ...this.block(this.task ?? "(none recorded)"), "");
    return lines;
  }

  private assistant(row: UncheckedRecord<AssistantRecord>): string[] {
    if (typeof row.model === "string") this.model = row.model;
    const withheld = withheldLines(row.content);
    const texts = Array.isArray(row.content)
      ? row.content.filter(
          (block): block is { type: "text"; text: string } =>
            typeof block === "object" &&
            block !== null &&
            block.type === "text" &&
            typeof block.text === "string",
        )
      : [];
    const text = texts
      .map((block) => block.text)
      .join("\n")
      .trim();
    return text === "" ? withheld : [...withheld, "model:", ...this.block(text)];
  }

  private toolCall(row: UncheckedRecord<ToolCallRecord>): string[] {
    if (typeof row.id !== "string") return [];
    this.steps += 1;
    this.calls.set(row.id, {
      n: this.steps,
      name: typeof row.name === "string" ? row.name : "?",
      input: row.input,
    });
    return [];
  }

  private toolResult(row: UncheckedRecord<ToolResultRanRecord>): string[] {
    const call = typeof row.id === "string" ? this.calls.get(row.id) : undefined;
    if (typeof row.id === "string") this.calls.delete(row.id);
    const shown = call ?? { n: ++this.steps, name: typeof row.name === "string" ? row.name : "?", input: {} };
    const lines = callHead(shown, typeof row.command === "string" ? row.command : undefined);
    const content = typeof row.content === "string" ? row.content : "";
    if (row.exitCode === undefined) {
      // Answered without running a command: blocked, bad input, cancelled, or a tool other than bash.
      if (shown.name === "str_replace_based_edit_tool")
        lines.push(`${INDENT}${editorOutcome(shown.input, content, row.isError === true)}`);
      else if (shown.name !== "bash")
        lines.push(
          `${INDENT}${row.isError === true ? `error: ${firstLine(content)}` : `ok (${content.length} characters)`}`,
        );
      else lines.push(`${INDENT}not run: ${firstLine(content) || "(no reason recorded)"}`);
      return lines;
    }
    lines.push(`${INDENT}${exitFacts(row).join(" · ")}`);
    const stderr = typeof row.stderr === "string" ? lastLine(row.stderr) : "";
    if (row.exitCode !== 0 && stderr !== "") lines.push(`${INDENT}stderr: ${stderr}`);
    return lines;
  }

  /** A step that changed files is marked under its call: "files: 1 added, 2 changed" (`runs diff --step N`). */
  private checkpoint(row: UncheckedRecord<CheckpointRecord>): string[] {
    if (typeof row.gaveUp === "string") return [`${INDENT}checkpoints stopped: ${oneLine(row.gaveUp)}`];
    const count = (value: unknown) => (typeof value === "number" && value > 0 ? value : 0);
    const parts = [
      [count(row.added), "added"],
      [count(row.changed), "changed"],
      [count(row.removed), "removed"],
    ].filter(([n]) => (n as number) > 0);
    // Step 0 of a new run is the workspace as found: everything in it, not a change.
    if (parts.length === 0 || typeof row.step !== "number" || row.step === 0) return [];
    const what = parts.map(([n, word]) => `${n} ${word}`).join(", ");
    if (row.callId === undefined)
      return [`files changed outside the run before step ${row.step + 1}: ${what}`];
    return [`${INDENT}files: ${what}`];
  }

  private runEnd(row: UncheckedRecord<RunEndRecord>): string[] {
    this.ended = true;
    const status = typeof row.status === "string" ? row.status : "?";
    const turns = typeof row.turns === "number" ? row.turns : 0;
    const by = typeof row.endedBy === "string" ? ` (by ${safe(row.endedBy)})` : "";
    const facts = [`ended: ${safe(status)}${by} after ${turns} turn${turns === 1 ? "" : "s"}`];
    const usage = tokenUsage(row.usage);
    if (usage !== undefined) {
      const tokens =
        usage.inputTokens + usage.outputTokens + usage.cacheReadInputTokens + usage.cacheCreationInputTokens;
      facts.push(`${tokens.toLocaleString("en-US")} tokens`);
      const cost = this.cost(usage);
      if (cost !== undefined) facts.push(`about ${formatUsd(cost)}`);
    }
    const lines = ["", facts.join(" · ")];
    const error = row.error as { message?: unknown } | undefined;
    if (typeof error?.message === "string") lines.push(`error: ${firstLine(error.message)}`);
    if (typeof row.finalText === "string" && row.finalText.trim() !== "")
      lines.push("final text", ...this.block(row.finalText.trim()));
    return lines;
  }

  private block(text: string): string[] {
    const lines = safe(text).split("\n");
    const shown = lines.slice(0, this.maxTextLines).map((line) => `${INDENT}${line}`);
    if (lines.length > this.maxTextLines)
      shown.push(`${INDENT}… (${lines.length - this.maxTextLines} more lines)`);
    return shown;
  }

  private cost(usage: TokenUsage): number | undefined {
    if (this.model === undefined) return undefined;
    try {
      const pricing = resolvePricing(this.model, this.env);
      return pricing === undefined ? undefined : costUsd(pricing, usage);
    } catch {
      return undefined;
    }
  }
}

/** "exit 1", duration, and whatever else happened to the command. */
function exitFacts(row: UncheckedRecord<ToolResultRanRecord>): string[] {
  const facts = [typeof row.exitCode === "number" ? `exit ${row.exitCode}` : "no exit code"];
  if (typeof row.durationMs === "number") facts.push(shownDuration(row.durationMs));
  if (row.timedOut === true) facts.push("timed out");
  if (row.canceled === true) facts.push("cancelled");
  if (row.oomKilled === true) facts.push("killed: out of memory");
  if (row.truncated === true) {
    const bytes = [row.stdoutBytes, row.stderrBytes].map((n) => (typeof n === "number" ? n : 0));
    facts.push(`output cut (stdout ${bytes[0]} bytes, stderr ${bytes[1]} bytes)`);
  }
  if (Array.isArray(row.notices)) {
    const notes = row.notices.filter((note): note is string => typeof note === "string").map(oneLine);
    if (notes.length > 0) facts.push(`notes: ${notes.join("; ")}`);
  }
  return facts;
}

function tokenUsage(value: unknown): TokenUsage | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const n = (key: keyof TokenUsage) => {
    const v = (value as Record<string, unknown>)[key];
    return typeof v === "number" && Number.isFinite(v) ? v : 0;
  };
  return {
    inputTokens: n("inputTokens"),
    outputTokens: n("outputTokens"),
    cacheReadInputTokens: n("cacheReadInputTokens"),
    cacheCreationInputTokens: n("cacheCreationInputTokens"),
  };
}

function shownTime(iso: string): string {
  const ms = Date.parse(iso);
  return Number.isNaN(ms) ? safe(iso) : `${new Date(ms).toISOString().slice(0, 19).replace("T", " ")} UTC`;
}

function shownDuration(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

function lastLine(text: string): string {
  const lines = text.trimEnd().split("\n");
  return oneLine(lines[lines.length - 1] ?? "");
}
