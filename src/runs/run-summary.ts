/**
 * What one transcript says about its run, read cheaply: a small file whole, a big one only at its
 * head (the run_start record) and its tail (the last assistant and run_end records), never the
 * middle, so a transcript of 64 MiB costs two reads. The writer puts `"type"` first in every record
 * (src/transcript/transcript.ts), so records are found by their line prefix and only the few needed
 * are parsed. A file that is not a transcript, or was cut mid-record, is described, never thrown.
 */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import type { ExitStatus } from "../agent/exit-status.js";
import type { TokenUsage } from "../model/model-client.js";
import type {
  AssistantRecord,
  RunEndRecord,
  RunStartRecord,
  UncheckedRecord,
  UsageRecord,
} from "../transcript/transcript-records.js";
import { tryTranscriptRow } from "../transcript/transcript-rows.js";
import { describeFsError } from "./run-files.js";

/** How far a transcript could be read. */
export type TranscriptState =
  /** It starts with a run_start record. */
  | "ok"
  /** Nothing written yet. */
  | "empty"
  /** The first line is not a run_start record (not a harness transcript, or damaged). */
  | "corrupt"
  /** It could not be opened or read. */
  | "unreadable";

/** What a transcript says about its run. */
export interface TranscriptSummary {
  state: TranscriptState;
  /** Why it is corrupt or unreadable. */
  problem?: string;
  /** The first run_start's time, ms since the epoch. */
  startedMs?: number;
  /** The first run_start's task (an interactive session's first prompt). */
  task?: string;
  /** The host workspace, when the run_start record carries it. */
  workspace?: string;
  /** The model of the last assistant record read. */
  model?: string;
  /** How the last run_end read says the run ended; undefined when it has not ended (yet). */
  status?: ExitStatus;
  /** The last run_end's final text. */
  finalText?: string;
  /** Model calls summed over the run_end records read (a run not ended: its usage records so far). */
  turns: number;
  /** Tokens summed over the run_end records read (a run not ended: its last usage record's total). */
  usage: TokenUsage;
  /** run_end records read (an interactive session has one per prompt). */
  runEnds: number;
  /** True when the middle of a big file was skipped: turns and usage may then miss earlier prompts. */
  partial: boolean;
  /** True when the file does not end with a newline: the writer stopped mid-record. */
  cutMidRecord: boolean;
}

export interface SummaryOptions {
  /** Bytes read from each end of a big file. Default 64 KiB; a file up to twice this is read whole. */
  edgeBytes?: number;
  /** Most bytes read at one end to reach a whole line. Default 4 MiB. */
  maxEdgeBytes?: number;
  /** The file's size when the caller just looked (a listing's lstat): saves an fstat per file. */
  size?: number;
}

const ZERO_USAGE: TokenUsage = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadInputTokens: 0,
  cacheCreationInputTokens: 0,
});
const NEWLINE = 0x0a;
const RUN_START = Buffer.from('{"type":"run_start"');
const RUN_END = Buffer.from('{"type":"run_end"');
const ASSISTANT = Buffer.from('{"type":"assistant"');
const USAGE = Buffer.from('{"type":"usage"');
/** The writer's field order: type, time, id, model. A cheap look at the model, with JSON as fallback. */
const ASSISTANT_MODEL = /^\{"type":"assistant","time":"[^"]*","id":"(?:[^"\\]|\\.)*","model":"([^"\\]*)"/;

/** Summarises the transcript at `path`. Never throws. */
export function summarizeTranscript(path: string, options: SummaryOptions = {}): TranscriptSummary {
  const edge = options.edgeBytes ?? 16384;
  const maxEdge = Math.max(edge, options.maxEdgeBytes ?? 4 * 1024 ** 2);
  let fd: number | undefined;
  try {
    fd = openSync(path, "r");
    const size = options.size ?? fstatSync(fd).size;
    if (size === 0) return blank("empty");
    if (size <= 2 * edge) return summarize(readAt(fd, 0, size, "head"), undefined, false);
    const head = readUntilLine(fd, size, edge, maxEdge, "head");
    const tail = readUntilLine(fd, size, edge, maxEdge, "tail");
    // Grown ends that meet cover the file: read it whole rather than count a record twice.
    if (head.length + tail.length >= size) return summarize(readAt(fd, 0, size, "head"), undefined, false);
    return summarize(head, tail, true);
  } catch (error) {
    return { ...blank("unreadable"), problem: describeFsError(error) };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Summarises bytes of a transcript: `head` alone when the whole file was read, else its head and
 * tail. Each holds whole lines only, except a head's possibly cut last line and a tail's cut first.
 */
function summarize(head: Buffer, tail: Buffer | undefined, partial: boolean): TranscriptSummary {
  const headLines = lineStarts(head, false);
  const tailLines = tail === undefined ? [] : lineStarts(tail, true);
  const last = tail ?? head;
  const summary: TranscriptSummary = { ...blank("ok"), partial, cutMidRecord: last.at(-1) !== NEWLINE };
  const first = runStartLine(head);
  const start = first === undefined ? undefined : tryTranscriptRow(first);
  if (start === undefined || start["type"] !== "run_start") {
    const why =
      first === undefined ? "its first record is cut off" : "its first line is not a run_start record";
    return { ...summary, state: "corrupt", problem: `not a harness transcript: ${why}` };
  }
  readRunStart(summary, start as UncheckedRecord<RunStartRecord> & { workspace?: unknown });

  // Every whole record that starts in what was read, in file order.
  const records: Array<{ buffer: Buffer; at: number }> = [
    ...headLines.map((at) => ({ buffer: head, at })),
    ...tailLines.map((at) => ({ buffer: last, at })),
  ];
  let lastStartIndex = 0;
  let lastEndIndex = -1;
  records.forEach(({ buffer, at }, index) => {
    if (startsWith(buffer, at, RUN_START)) lastStartIndex = index;
    if (!startsWith(buffer, at, RUN_END)) return;
    const line = completeLine(buffer, at);
    const end = line === undefined ? undefined : tryTranscriptRow(line);
    if (end === undefined) return;
    lastEndIndex = index;
    readRunEnd(summary, end as UncheckedRecord<RunEndRecord>);
  });
  // A prompt started after the last run_end (an interactive session, or a crash mid-run): not ended.
  // Its tokens so far are in its last usage record's running total, one usage record per model call.
  if (lastEndIndex < lastStartIndex) {
    delete summary.status;
    let calls = 0;
    let total: unknown;
    for (let index = records.length - 1; index > lastStartIndex; index--) {
      const record = records[index];
      if (record === undefined || !startsWith(record.buffer, record.at, USAGE)) continue;
      calls += 1;
      if (total === undefined) {
        const line = completeLine(record.buffer, record.at);
        total = (line === undefined ? undefined : (tryTranscriptRow(line) as UncheckedRecord<UsageRecord>))
          ?.total;
      }
    }
    summary.turns += calls;
    summary.usage = addUsage(summary.usage, total);
  }
  for (let index = records.length - 1; index >= 0; index--) {
    const record = records[index];
    if (record === undefined || !startsWith(record.buffer, record.at, ASSISTANT)) continue;
    const model = modelOf(record.buffer, record.at);
    if (model !== undefined) {
      summary.model = model;
      break;
    }
  }
  return summary;
}

function readRunStart(
  summary: TranscriptSummary,
  start: UncheckedRecord<RunStartRecord> & { workspace?: unknown },
) {
  if (typeof start.task === "string") summary.task = start.task;
  if (typeof start.workspace === "string") summary.workspace = start.workspace;
  const startedMs = typeof start.time === "string" ? Date.parse(start.time) : Number.NaN;
  if (!Number.isNaN(startedMs)) summary.startedMs = startedMs;
}

function readRunEnd(summary: TranscriptSummary, end: UncheckedRecord<RunEndRecord>) {
  summary.runEnds += 1;
  if (typeof end.status === "string") summary.status = end.status as ExitStatus;
  if (typeof end.finalText === "string") summary.finalText = end.finalText;
  if (typeof end.turns === "number" && Number.isFinite(end.turns)) summary.turns += end.turns;
  summary.usage = addUsage(summary.usage, end.usage);
}

function addUsage(total: TokenUsage, more: unknown): TokenUsage {
  if (typeof more !== "object" || more === null) return total;
  const add = (key: keyof TokenUsage) => {
    const n = (more as Record<string, unknown>)[key];
    return total[key] + (typeof n === "number" && Number.isFinite(n) ? n : 0);
  };
  return {
    inputTokens: add("inputTokens"),
    outputTokens: add("outputTokens"),
    cacheReadInputTokens: add("cacheReadInputTokens"),
    cacheCreationInputTokens: add("cacheCreationInputTokens"),
  };
}

function modelOf(buffer: Buffer, at: number): string | undefined {
  const peek = buffer.toString("utf8", at, Math.min(buffer.length, at + 512));
  const quick = ASSISTANT_MODEL.exec(peek)?.[1];
  if (quick !== undefined) return quick;
  const line = completeLine(buffer, at);
  const record =
    line === undefined ? undefined : (tryTranscriptRow(line) as UncheckedRecord<AssistantRecord>);
  return typeof record?.model === "string" ? record.model : undefined;
}

/**
 * Offsets where whole lines start. In a tail the first line is cut (it began before the tail), so
 * lines start after each newline; in a head (or a whole file) at 0 and after each newline.
 */
function lineStarts(buffer: Buffer, isTail: boolean): number[] {
  const starts: number[] = isTail ? [] : [0];
  let at = buffer.indexOf(NEWLINE);
  while (at !== -1 && at + 1 < buffer.length) {
    starts.push(at + 1);
    at = buffer.indexOf(NEWLINE, at + 1);
  }
  return starts;
}

const SYSTEM_FIELD = Buffer.from(',"system":"');

/**
 * The first line, without the run_start's system prompt (kilobytes nobody lists), when it is whole.
 * `,"system":"` with an unescaped quote can only be the key itself: a quote inside a JSON string is
 * always escaped, and the fields before it (type, time, task) are strings.
 */
function runStartLine(head: Buffer): string | undefined {
  const end = head.indexOf(NEWLINE);
  if (end === -1) return undefined;
  const system = head.indexOf(SYSTEM_FIELD);
  if (system === -1 || system > end) return head.toString("utf8", 0, end);
  const close = closingQuote(head, system + SYSTEM_FIELD.length, end);
  if (close === -1) return head.toString("utf8", 0, end);
  return head.toString("utf8", 0, system) + head.toString("utf8", close + 1, end);
}

/** The offset of the quote that ends the JSON string starting at `from`, or -1 before `end`. */
function closingQuote(buffer: Buffer, from: number, end: number): number {
  let at = buffer.indexOf(0x22, from);
  while (at !== -1 && at < end) {
    let backslashes = 0;
    while (buffer[at - 1 - backslashes] === 0x5c) backslashes += 1;
    if (backslashes % 2 === 0) return at;
    at = buffer.indexOf(0x22, at + 1);
  }
  return -1;
}

/** The line starting at `at`, when its newline is in the buffer. */
function completeLine(buffer: Buffer, at: number): string | undefined {
  const end = buffer.indexOf(NEWLINE, at);
  return end === -1 ? undefined : buffer.toString("utf8", at, end);
}

function startsWith(buffer: Buffer, at: number, prefix: Buffer): boolean {
  if (at + prefix.length > buffer.length) return false;
  return buffer.compare(prefix, 0, prefix.length, at, at + prefix.length) === 0;
}

/**
 * One end of a big file, grown (×4, up to `maxBytes`) until it holds a whole line: the head's first
 * line (the run_start, with the system prompt), the tail's last (the run_end, with the final text).
 */
function readUntilLine(
  fd: number,
  size: number,
  bytes: number,
  maxBytes: number,
  end: "head" | "tail",
): Buffer {
  let length = Math.min(bytes, size);
  for (;;) {
    const buffer = readAt(fd, end === "head" ? 0 : size - length, length, end);
    const wholeLine =
      end === "head"
        ? buffer.indexOf(NEWLINE) !== -1
        : // The last line ends at the buffer's end; a newline before that marks where it starts.
          buffer.lastIndexOf(NEWLINE, buffer.length - 2) !== -1;
    if (wholeLine || length >= Math.min(size, maxBytes)) return buffer;
    length = Math.min(size, maxBytes, length * 4);
  }
}

/**
 * Reused between files: listing thousands of runs allocates nothing per file. Safe because a summary
 * is made synchronously and keeps only strings and numbers, never a view of these bytes.
 */
const scratch = { head: Buffer.alloc(0), tail: Buffer.alloc(0) };

function readAt(fd: number, position: number, length: number, slot: keyof typeof scratch): Buffer {
  if (scratch[slot].length < length) scratch[slot] = Buffer.allocUnsafe(Math.max(length, 64 * 1024));
  const buffer = scratch[slot];
  let read = 0;
  while (read < length) {
    const n = readSync(fd, buffer, read, length - read, position + read);
    if (n === 0) break;
    read += n;
  }
  return buffer.subarray(0, read);
}

function blank(state: TranscriptState): TranscriptSummary {
  return { state, turns: 0, usage: ZERO_USAGE, runEnds: 0, partial: false, cutMidRecord: false };
}
