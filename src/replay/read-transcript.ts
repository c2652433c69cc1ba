/**
 * Reads a JSONL transcript written by `harness run` (src/transcript/transcript.ts) back into the tool
 * calls it recorded, in order, each with what the recording got. Field names come from the writer's
 * record types (src/transcript/transcript-records.ts). Anything that is not a transcript of that shape
 * is refused with the line number of the first record that does not fit.
 */
import { ConfigError } from "../errors.js";
import { readTranscriptFile } from "../transcript/read-transcript-file.js";
import type {
  RunStartEgress,
  RunStartRecord,
  ToolCallRecord,
  ToolResultRanRecord,
  TranscriptRecord,
  UncheckedRecord,
} from "../transcript/transcript-records.js";
import { transcriptRows } from "../transcript/transcript-rows.js";

/** What a command printed and returned when it was recorded. */
export type RecordedOutput = Pick<ToolResultRanRecord, "exitCode" | "stdout" | "stderr" | "timedOut">;

interface CallBase {
  /** 1-based position among all tool calls of the transcript. */
  n: number;
  /** The `tool_use` id. */
  id: string;
  /** Line of the `tool_call` record in the file. */
  line: number;
  /** The tool the model called (the replayable ones: "bash" and the text editor). */
  name: string;
  /** The tool input as the model wrote it (for bash: `command`, optional `timeout` in seconds). */
  input: unknown;
  /** The command line ("" when the input had none); for the editor, its command and path. */
  command: string;
}

/**
 * A call that ran in the recording: replay it and compare. An editor call ran no one command: its
 * answer is compared as stdout, an error as exit code 1.
 */
export interface RanCall extends CallBase {
  kind: "ran";
  /** What the recording got. */
  recorded: RecordedOutput;
}

/** The text editor's tool name (tools/editor/editor-tool.ts). */
export const EDITOR_TOOL = "str_replace_based_edit_tool";

/** A call that did not run to completion in the recording: reported, never replayed. */
export interface SkippedCall extends CallBase {
  kind: "skipped";
  /** Why it is not replayed, e.g. "blocked in the recording: …". */
  reason: string;
}

export type RecordedCall = RanCall | SkippedCall;

/** A transcript's tool calls and what it was about. */
export interface ParsedTranscript {
  /** The task of the first run in the file. */
  task: string;
  /** Every tool call, in the order they were made. */
  calls: RecordedCall[];
  /** The recording's default per-command timeout, when the transcript says. */
  commandTimeoutMs?: number;
  /** The recording's allowlist mode, when it had one (replay starts a gateway with the same list). */
  egress?: RunStartEgress;
}

/** A transcript that cannot be read or is not one; the CLI exits with the usage code (2). */
export class TranscriptError extends ConfigError {}

/** Reads and parses the transcript at `path`. Rejects with `TranscriptError`. */
export async function readTranscript(path: string): Promise<ParsedTranscript> {
  return readTranscriptFile(path, parseTranscript, (message) => new TranscriptError(message));
}

/** Parses JSONL transcript text. Throws `TranscriptError` naming the first bad line. */
export function parseTranscript(text: string): ParsedTranscript {
  const calls: RecordedCall[] = [];
  const open = new Map<string, CallBase>();
  let task: string | undefined;
  let commandTimeoutMs: number | undefined;
  let egress: RunStartEgress | undefined;
  for (const { row, line } of transcriptRows(text, (message) => new TranscriptError(message))) {
    if (task === undefined) {
      if (row.type !== "run_start")
        fail(line, `expected a run_start record first (is this a harness transcript?)`);
      const start: UncheckedRecord<RunStartRecord> = row;
      task = typeof start.task === "string" ? start.task : "";
      const timeout = start.commandTimeoutMs;
      if (typeof timeout === "number" && timeout > 0) commandTimeoutMs = timeout;
      if (start.egress !== undefined) egress = egressOf(start.egress, line);
    }
    if (row.type === "tool_call") {
      const call = toolCall(row, line, calls.length + open.size + 1);
      if (open.has(call.id) || calls.some((c) => c.id === call.id))
        fail(line, `tool_call id '${call.id}' appears twice`);
      open.set(call.id, call);
    } else if (row.type === "tool_result") {
      const id = stringField<ToolResultRanRecord>(row, "id", line);
      const call = open.get(id);
      if (call === undefined) fail(line, `tool_result '${id}' has no tool_call before it`);
      open.delete(id);
      calls.push(withResult(call, row, line));
    }
  }
  if (task === undefined) throw new TranscriptError("the file has no records");
  // A call with no result: the recording stopped (crash, kill) while it ran.
  for (const call of open.values())
    calls.push({ ...call, kind: "skipped", reason: "no result was recorded (the recording ended here)" });
  calls.sort((a, b) => a.n - b.n);
  const parsed: ParsedTranscript = { task, calls };
  if (commandTimeoutMs !== undefined) parsed.commandTimeoutMs = commandTimeoutMs;
  if (egress !== undefined) parsed.egress = egress;
  return parsed;
}

/** run_start's `egress`, checked: replay would open the sandbox's network to what it names. */
function egressOf(value: unknown, line: number): RunStartEgress {
  const egress = value as { [K in keyof RunStartEgress]?: unknown } | null;
  const hosts = egress?.allowHosts;
  if (!Array.isArray(hosts) || !hosts.every((host) => typeof host === "string"))
    fail(line, '"egress" needs "allowHosts", a list of strings');
  const limit = egress?.limitBytes;
  if (typeof limit !== "number" || !(limit > 0)) fail(line, '"egress" needs "limitBytes", a positive number');
  const allowPrivate = egress?.allowPrivate ?? false;
  if (typeof allowPrivate !== "boolean") fail(line, '"egress.allowPrivate" must be true or false');
  const secrets = egress?.secrets ?? [];
  if (!Array.isArray(secrets) || !secrets.every((s) => typeof s === "string"))
    fail(line, '"egress.secrets" must be a list of strings');
  const rules = egress?.requestRules ?? [];
  if (!Array.isArray(rules) || !rules.every((r) => typeof r === "string"))
    fail(line, '"egress.requestRules" must be a list of strings');
  const clientEnv = egress?.clientEnv ?? [];
  if (!Array.isArray(clientEnv) || !clientEnv.every((e) => typeof e === "string"))
    fail(line, '"egress.clientEnv" must be a list of strings');
  return {
    allowHosts: hosts as string[],
    allowPrivate,
    limitBytes: limit,
    ...(secrets.length > 0 ? { secrets: secrets as string[] } : {}),
    ...(rules.length > 0 ? { requestRules: rules as string[] } : {}),
    ...(clientEnv.length > 0 ? { clientEnv: clientEnv as string[] } : {}),
  };
}

function toolCall(row: UncheckedRecord<ToolCallRecord>, line: number, n: number): CallBase {
  const input = row.input;
  const fields = input as { command?: unknown; path?: unknown } | null | undefined;
  const name = stringField(row, "name", line);
  const command =
    name === EDITOR_TOOL
      ? `${String(fields?.command ?? "")} ${String(fields?.path ?? "")}`.trim()
      : typeof fields?.command === "string"
        ? fields.command
        : "";
  return { n, id: stringField(row, "id", line), line, name, input, command };
}

function withResult(call: CallBase, row: UncheckedRecord<ToolResultRanRecord>, line: number): RecordedCall {
  if (call.name === EDITOR_TOOL) {
    const content = stringField(row, "content", line);
    const isError = booleanField(row, "isError", line);
    return {
      ...call,
      kind: "ran",
      recorded: { exitCode: isError ? 1 : 0, stdout: content, stderr: "", timedOut: false },
    };
  }
  if (call.name !== "bash")
    return { ...call, kind: "skipped", reason: `not a bash call (tool '${call.name}')` };
  if (row.exitCode === undefined) {
    // The tool answered without running anything: blocked, bad input, cut off, run ended.
    const content = typeof row.content === "string" ? row.content : "";
    const first = (content.split("\n")[0] ?? "").slice(0, 120);
    return {
      ...call,
      kind: "skipped",
      reason: `not run in the recording: ${first || "(no reason recorded)"}`,
    };
  }
  const exitCode = row.exitCode;
  if (exitCode !== null && !Number.isInteger(exitCode)) fail(line, '"exitCode" must be an integer or null');
  const recorded: RecordedOutput = {
    exitCode: exitCode as number | null,
    stdout: stringField(row, "stdout", line),
    stderr: stringField(row, "stderr", line),
    timedOut: booleanField(row, "timedOut", line),
  };
  // A cancelled command stopped wherever Ctrl-C caught it: there is nothing exact to compare against.
  if (booleanField(row, "canceled", line))
    return { ...call, kind: "skipped", reason: "cancelled by the user in the recording" };
  return { ...call, kind: "ran", recorded };
}

function stringField<R extends TranscriptRecord>(
  row: UncheckedRecord<R>,
  key: keyof R & string,
  line: number,
): string {
  const value = row[key];
  if (typeof value !== "string") fail(line, `${row.type} record needs a string "${key}"`);
  return value;
}

function booleanField<R extends TranscriptRecord>(
  row: UncheckedRecord<R>,
  key: keyof R & string,
  line: number,
): boolean {
  const value = row[key] ?? false;
  if (typeof value !== "boolean") fail(line, `"${key}" must be true or false`);
  return value;
}

function fail(line: number, message: string): never {
  throw new TranscriptError(`line ${line}: ${message}`);
}
