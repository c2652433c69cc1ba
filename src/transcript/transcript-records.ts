/**
 * The records of a JSONL transcript, one per line: `{ "type": …, "time": ISO-8601, …fields }`. The
 * writer (transcript.ts) builds exactly these, and replay's reader (src/replay/read-transcript.ts)
 * reads its fields by these names, so a field renamed or added here is a compile error in both.
 */
import type { AgentLimits } from "../agent/agent-types.js";
import type { ContextEdit } from "../agent/context/context-edits.js";
import type { ExitStatus } from "../agent/exit-status.js";
import type { ErrorFacts } from "../errors.js";
import type { ContentBlock, StopReason, TokenUsage } from "../model/model-client.js";
import type { EgressRecord, ExecResult, PublishRecord } from "../sandbox/sandbox.js";

/**
 * A sandbox's record as a line of JSON: its fields as they are (documented where they are defined),
 * absent rather than `undefined`, and its `time` (when it began) kept as `openedAt`.
 */
type AsWritten<R extends { time: string }> = {
  [K in keyof Omit<R, "time">]: Exclude<Omit<R, "time">[K], undefined>;
};

/** Fields every record has. */
interface RecordBase<Type extends string> {
  /** The record type. */
  type: Type;
  /** When it was written, ISO-8601. */
  time: string;
}

/** A run began (one per run; an interactive session has several, and so has a continued run). */
export interface RunStartRecord extends RecordBase<"run_start"> {
  /** The user's task for this run. */
  task: string;
  /** The system prompt sent with every request. */
  system: string;
  /** Names of the tools the model may call. */
  tools: string[];
  /** The run's limits. */
  limits: AgentLimits;
  /** The default per-command timeout, in ms (replay uses it for calls that set none). */
  commandTimeoutMs?: number;
  /** The real host path of the workspace (for `harness runs`). */
  workspace?: string;
  /** Allowlist mode's settings (replay starts a gateway with the same allowlist); absent without one. */
  egress?: RunStartEgress;
  /** The model's context window and how it was kept within it (agent/context/); absent before harness managed it. */
  context?: { window: number; strategy: string };
  /** `run --fork RUN@N`: the run this one was forked from and the step its workspace and conversation are. */
  forkOf?: { run: string; step: number };
  /**
   * The harness process that wrote this run. A continued run (`--continue`, `--resume`) has its own,
   * and the run id's pid names only the first: this one tells whether the transcript is still open.
   */
  pid?: number;
  /**
   * `--devcontainer`: the postCreateCommand this session's sandbox ran when it created its
   * container (first run_start of the session only); absent when none ran.
   */
  postCreate?: PostCreateRun;
  /**
   * `harness mcp`: the run's tool calls came from an MCP client, whose model and conversation harness
   * never sees: its tool_call and tool_result records answer no assistant turn, and there is no
   * conversation to continue. Transcripts written before this field say so by `MCP_SESSION_TASK`.
   */
  mcpSession?: true;
}

/** What an MCP session's run_start says its task was: the session, not a prompt. */
export const MCP_SESSION_TASK = "(MCP session: tool calls from an MCP client)";

/** devcontainer.json's postCreateCommand as it ran in the sandbox: like a command's tool result. */
export interface PostCreateRun {
  /** The command line. */
  command: string;
  /** The "uid:gid" it ran as. */
  user: string;
  /** Standard output (capped). */
  stdout: string;
  /** Standard error (capped). */
  stderr: string;
  /** The exit code; `null` when it never returned one (killed on timeout). */
  exitCode: number | null;
  /** Wall-clock time, in ms. */
  durationMs: number;
  /** True when it was killed on its timeout. */
  timedOut: boolean;
}

/** Allowlist mode as a run was given it. */
export interface RunStartEgress {
  /** The allow entries as given to the sandbox (`--allow-host`, and `--allow` presets resolved). */
  allowHosts: string[];
  /** `--allow-private` was given. */
  allowPrivate: boolean;
  /** Most bytes the run's connections could carry (`--egress-limit`). */
  limitBytes: number;
  /** `--secret` grants as `NAME@host:ports` (never a value); a replay needs each flag again. */
  secrets?: string[];
  /** `--allow-request` rules, normalized; a replay keeps them. */
  requestRules?: string[];
  /** The presets' variables for the sandbox's tools (no credential is in them); a replay keeps them. */
  clientEnv?: string[];
}

/** A user text the loop sent: the task, or a nudge such as "continue in smaller steps". */
export interface UserRecord extends RecordBase<"user"> {
  /** The text. */
  text: string;
  /** The writer masked a secret in the text: it is not what the model was sent (record-secrets.ts). */
  masked?: boolean;
}

/**
 * A signed block (thinking, redacted_thinking, compaction) the writer did not write because it held
 * an Anthropic API key: what stands in its place in an assistant record (record-secrets.ts).
 */
export interface WithheldBlock {
  type: "withheld";
  /** The type of the block not written. */
  block: string;
  /** Why. */
  reason: string;
}

/** A whole assistant response. */
export interface AssistantRecord extends RecordBase<"assistant"> {
  /** The API's message id. */
  id: string;
  /** The model that answered. */
  model: string;
  /** Why the model stopped; `null` if the stream ended without saying. */
  stopReason: StopReason | null;
  /**
   * The response's blocks: text, tool_use, … Signed blocks are verbatim, or withheld when they held
   * an Anthropic API key; a secret in any other block is masked.
   */
  content: Array<ContentBlock | WithheldBlock>;
  /** Tokens of this one response. */
  usage: TokenUsage;
  /** Indices of the blocks in which the writer masked a secret: they are not what the model sent. */
  maskedBlocks?: number[];
}

/** A tool call the model made, before it runs (or is answered without running). */
export interface ToolCallRecord extends RecordBase<"tool_call"> {
  /** The `tool_use` id. */
  id: string;
  /** The tool the model called. */
  name: string;
  /** The input as the model wrote it (for bash: `command`, optional `timeout` in seconds). */
  input: unknown;
}

/** What every tool_result record has. */
interface ToolResultBase extends RecordBase<"tool_result"> {
  /** The `tool_use` id it answers. */
  id: string;
  /** The tool. */
  name: string;
  /** True when the call failed, was blocked, timed out or could not run. */
  isError: boolean;
  /** The text the model got back. */
  content: string;
  /** The writer masked a secret in `content`: it is not what the model was sent (record-secrets.ts). */
  masked?: boolean;
}

/** The result of a call that ran no command (blocked, bad input, cut off, cancelled before it ran). */
export interface ToolResultNotRunRecord extends ToolResultBase {
  /** The command the input named, when it named one. */
  command?: string;
}

/**
 * The result of a call that ran a command: what the command got (`ExecResult`'s fields, stdout and
 * stderr as capped and scrubbed of secrets). Only these have `exitCode`. The file's names differ
 * from `ExecResult`'s where they were fixed before it (`canceled`, `truncated`, `null`).
 */
export interface ToolResultRanRecord
  extends ToolResultBase,
    Pick<
      ExecResult,
      | "command"
      | "stdout"
      | "stderr"
      | "durationMs"
      | "timedOut"
      | "oomKilled"
      | "stdoutBytes"
      | "stderrBytes"
      | "notices"
    > {
  /** The exit code; `null` when it never returned one (killed on timeout). */
  exitCode: number | null;
  /** True when the user cancelled it (Ctrl-C). */
  canceled: boolean;
  /** True when stdout or stderr was cut. */
  truncated: boolean;
}

export type ToolResultRecord = ToolResultNotRunRecord | ToolResultRanRecord;

/** Tokens of one response, and the run's total so far. */
export interface UsageRecord extends RecordBase<"usage"> {
  /** This response's tokens. */
  usage: TokenUsage;
  /** The run's tokens so far. */
  total: TokenUsage;
}

/** Something the user was told: a limit was reached, the model was told to continue, … */
export interface NoticeRecord extends RecordBase<"notice"> {
  /** The text. */
  text: string;
}

/**
 * Allowlist mode: one connection through the gateway (or one plain-HTTP request), written when it
 * ended; a refusal at once. The sandbox's `EgressRecord`, with its opening time as `openedAt`.
 */
export interface EgressTranscriptRecord extends RecordBase<"egress">, AsWritten<EgressRecord> {
  /** When the connection was opened, ISO-8601 (`time` is when it ended and was written). */
  openedAt: string;
}

/**
 * The workspace's checkpoint after a step (one tool call answered; step 0: before the first call),
 * stored in `<runs>/<id>.checkpoints/` (src/checkpoints/). What changed since the step before.
 */
export interface CheckpointRecord extends RecordBase<"checkpoint"> {
  /** The step: 0 before the first tool call, then the nth tool call of this transcript. */
  step: number;
  /** The `tool_use` id of the step's call (absent for step 0 and a continued run's first). */
  callId?: string;
  /** Paths added since the step before. */
  added: number;
  /** Paths whose content, mode, type or link target changed. */
  changed: number;
  /** Paths removed. */
  removed: number;
  /** Paths left out (fifos, sockets, devices, unreadable). */
  skipped: number;
  /** Time the snapshot took, in ms. */
  durationMs: number;
  /** Why the snapshot gave up (a limit): no later step of the run has a checkpoint. */
  gaveUp?: string;
}

/**
 * `--publish`: one connection from the host's loopback to a server in the sandbox, written when it
 * ended. The sandbox's `PublishRecord`, with its opening time as `openedAt`.
 */
export interface PublishTranscriptRecord extends RecordBase<"publish">, AsWritten<PublishRecord> {
  /** When the connection was accepted, ISO-8601 (`time` is when it ended and was written). */
  openedAt: string;
}

/**
 * The conversation was edited to fit the model's context window (agent/context/context-edits.ts): a
 * server compaction (the blocks before the `compaction` block dropped), tool results cleared (what
 * the model sees instead), or a summary (the messages it replaces). `run --continue` applies the
 * same edit at the same point of the conversation (read-conversation.ts).
 */
export type ContextRecord = RecordBase<"context"> &
  ContextEdit & {
    /** The writer masked a secret in the summary: it is not what the model was sent. */
    masked?: boolean;
  };

/** A run ended. */
export interface RunEndRecord extends RecordBase<"run_end"> {
  /** How it ended. */
  status: ExitStatus;
  /** Model calls made. */
  turns: number;
  /** Tokens summed over the run. */
  usage: TokenUsage;
  /** The text of the last model response. */
  finalText: string;
  /** Why it failed, when it did. */
  error?: ErrorFacts;
  /**
   * What ended the session before the run ended by itself: `SIGTERM`, `SIGHUP`, `SIGINT`,
   * `stdout-closed` (its reader went away), `stdout-failed`, `stderr-closed`, `stderr-failed`,
   * `internal-error`. Absent when nothing did.
   */
  endedBy?: string;
}

export type TranscriptRecord =
  | RunStartRecord
  | UserRecord
  | AssistantRecord
  | ToolCallRecord
  | ToolResultRecord
  | UsageRecord
  | NoticeRecord
  | ContextRecord
  | EgressTranscriptRecord
  | CheckpointRecord
  | PublishTranscriptRecord
  | RunEndRecord;

/** A record as the writer hands it over: everything but the time, which the writer stamps. */
export type TranscriptEntry = WithoutTime<TranscriptRecord>;

/** `Omit<R, "time">` for each member of a union (a plain Omit would merge the members). */
type WithoutTime<R> = R extends unknown ? Omit<R, "time"> : never;

/**
 * A record as read back from a file: the same field names, their values not yet checked (any may be
 * missing or of the wrong type in a file someone else wrote).
 */
export type UncheckedRecord<R extends TranscriptRecord> = { [K in keyof R]?: unknown };
