/**
 * A JSONL record of a run, appended synchronously after every step, failed ones included, so a crash
 * or Ctrl-C keeps everything that happened up to it. It is an `AgentEvents` listener: combine it with
 * the terminal renderer via `combineEvents`. Its records are the types of transcript-records.ts, which
 * replay's reader reads by the same names.
 *
 * The file is only ever appended to, never truncated: a continued run (`run --continue`, `--resume`)
 * writes its own run_start and records after the earlier runs', and read-conversation.ts rebuilds the
 * conversation from all of them.
 */
import { basename, dirname } from "node:path";
import type { AgentEvents } from "../agent/events.js";
import { errorFacts } from "../errors.js";
import { type HostFile, openHostFile } from "../host-files/host-file.js";
import { type HostDir, HostPathError, openHostDir } from "../host-files/host-path.js";
import type { PublishRecord } from "../sandbox/sandbox.js";
import { recordForFile } from "./record-secrets.js";
import type { RunEndRecord, RunStartRecord, TranscriptEntry } from "./transcript-records.js";

export { scrubSecrets } from "./record-secrets.js";

export interface Transcript extends Required<Omit<AgentEvents, "onText" | "onThinking" | "onToolOutput">> {
  /** The JSONL file. */
  readonly path: string;
  /**
   * Appends one record now. Never throws: a record that cannot be written (a full disk) is told to
   * `onWriteFailed`, whose caller ends the run, and nothing more is written (a transcript with a gap
   * would rebuild a wrong conversation for `--continue`).
   */
  write(entry: TranscriptEntry): void;
  /** Closes the file once the run and its sandbox are over: later records are dropped. */
  close(): void;
  /**
   * The end of a session that the loop could not finish (an error nobody caught): a run_end for a
   * run that has none yet, with its turns and usage as recorded so far, then the file closed, so that
   * whatever the cut-short loop still does is not recorded after the run's end.
   */
  endUnfinished(status: RunEndRecord["status"], error?: unknown): void;
  /** `--publish`: one connection through a published port ended. */
  onPublish(record: PublishRecord): void;
}

export interface TranscriptOptions {
  /** Clock, for tests. */
  now?: () => Date;
  /**
   * More facts for every run_start record: the per-command timeout and allowlist mode (replay uses
   * both), the workspace and the writing process (`harness runs`, `run --continue`).
   */
  runStart?: Pick<
    RunStartRecord,
    "commandTimeoutMs" | "egress" | "workspace" | "pid" | "forkOf" | "context" | "mcpSession"
  >;
  /**
   * What ended the session early (`SIGTERM`, `stdout-closed`, …: session-end.ts), asked when a
   * run_end is written; undefined when the run ended by itself.
   */
  endedBy?: () => string | undefined;
  /** `--devcontainer`: the postCreateCommand the sandbox ran; written into the first run_start only. */
  postCreate?: RunStartRecord["postCreate"] | undefined;
  /**
   * Told once when harness refuses to write the file (it is, or became, a symlink, a fifo, another
   * file: host-file.ts); nothing more is written to it. The run goes on.
   */
  onRefused?: (error: HostPathError) => void;
  /**
   * Told once when a record could not be written (ENOSPC, EDQUOT, EIO); the file is left as it was
   * before that record (host-file.ts cuts a partial append back) and nothing more is written to it.
   */
  onWriteFailed?: (error: NodeJS.ErrnoException) => void;
}

export function createTranscript(path: string, options: TranscriptOptions = {}): Transcript {
  const now = options.now ?? (() => new Date());
  // Held open from the first record on and appended through its descriptor: a name swapped for a
  // link by the sandbox (a transcript inside the workspace) is never followed, only detected.
  let file: { dir: HostDir; file: HostFile } | undefined;
  let done = false;
  let postCreate = options.postCreate;

  const open = () => {
    const dir = openHostDir(dirname(path), 0o700);
    try {
      // Owner-only: a transcript holds the project's code and command output.
      return { dir, file: openHostFile(dir, basename(path), { mode: 0o600, append: true }) };
    } catch (error) {
      dir.close();
      throw error;
    }
  };
  // Never reopened by name: while harness holds the file, its inode cannot be reused, so the check
  // before each write tells it apart from anything swapped in; after a close, it could be.
  const close = () => {
    done = true;
    file?.file.close();
    file?.dir.close();
    file = undefined;
  };
  const write = (entry: TranscriptEntry) => {
    if (done) return;
    try {
      file ??= open();
      const { type, ...fields } = entry;
      // Secrets masked, signed blocks kept verbatim (record-secrets.ts).
      const line = JSON.stringify(recordForFile({ type, time: now().toISOString(), ...fields }), jsonSafe);
      file.file.write(`${line}\n`);
    } catch (error) {
      // Either is final. A refusal: whatever is at the name now is not harness's transcript. A
      // failed write (a full disk): the caller ends the run rather than let it go on unrecorded.
      close();
      if (error instanceof HostPathError) options.onRefused?.(error);
      else options.onWriteFailed?.(error as NodeJS.ErrnoException);
    }
  };

  // What a run_end written for an unfinished run says: the run so far.
  let runOpen = false;
  let turns = 0;
  let usage: RunEndRecord["usage"] = {
    inputTokens: 0,
    outputTokens: 0,
    cacheReadInputTokens: 0,
    cacheCreationInputTokens: 0,
  };
  const runEnd = (
    result: Omit<RunEndRecord, "type" | "time" | "endedBy" | "error"> & { error?: unknown },
  ) => {
    runOpen = false;
    const endedBy = options.endedBy?.();
    write({
      type: "run_end",
      status: result.status,
      turns: result.turns,
      usage: result.usage,
      finalText: result.finalText,
      ...(result.error === undefined ? {} : { error: errorFacts(result.error) }),
      ...(endedBy === undefined ? {} : { endedBy }),
    });
  };

  return {
    path,
    write,
    close,
    endUnfinished: (status, error) => {
      if (runOpen) runEnd({ status, turns, usage, finalText: "", error });
      close();
    },
    onRunStart: (info) => {
      runOpen = true;
      turns = 0;
      write({ type: "run_start", ...info, ...options.runStart, ...(postCreate ? { postCreate } : {}) });
      postCreate = undefined;
    },
    onUserMessage: (text) => write({ type: "user", text }),
    onAssistantTurn: (response) => {
      turns += 1;
      write({
        type: "assistant",
        id: response.id,
        model: response.model,
        stopReason: response.stopReason,
        content: response.content,
        usage: response.usage,
      });
    },
    onToolCall: (call) => write({ type: "tool_call", id: call.id, name: call.name, input: call.input }),
    onToolResult: (call, result) => {
      const exec = result.exec;
      const answer = { id: call.id, name: call.name, isError: result.isError, content: result.content };
      const record: Extract<TranscriptEntry, { type: "tool_result" }> =
        exec === undefined
          ? // Not run (blocked, bad input, cancelled): still say which command it was.
            { type: "tool_result", ...answer, ...(call.name === "bash" ? commandOf(call.input) : {}) }
          : {
              type: "tool_result",
              ...answer,
              command: exec.command,
              stdout: exec.stdout,
              stderr: exec.stderr,
              exitCode: exec.exitCode ?? null,
              durationMs: exec.durationMs,
              timedOut: exec.timedOut,
              canceled: exec.isCanceled,
              oomKilled: exec.oomKilled,
              truncated: exec.isTruncated,
              stdoutBytes: exec.stdoutBytes,
              stderrBytes: exec.stderrBytes,
              notices: exec.notices,
            };
      write(record);
    },
    onTurnUsage: (turnUsage, total) => {
      usage = total;
      write({ type: "usage", usage: turnUsage, total });
    },
    onNotice: (text) => write({ type: "notice", text }),
    onContextEdit: (edit) => write({ type: "context", ...edit }),
    onEgress: ({ time, callId, reason, address, status, lookedUp, secrets, ...record }) =>
      write({
        type: "egress",
        openedAt: time,
        ...(callId === undefined ? {} : { callId }),
        ...record,
        ...(reason === undefined ? {} : { reason }),
        ...(address === undefined ? {} : { address }),
        ...(status === undefined ? {} : { status }),
        ...(lookedUp === undefined ? {} : { lookedUp }),
        ...(secrets === undefined ? {} : { secrets }),
      }),
    onPublish: ({ time, error, ...record }) =>
      write({ type: "publish", openedAt: time, ...record, ...(error === undefined ? {} : { error }) }),
    // One run_end per run: after an unfinished run's end was written, the loop's own is dropped.
    onRunEnd: (result) => {
      if (runOpen) runEnd(result);
    },
  };
}

function commandOf(input: unknown): { command?: string } {
  const command = (input as { command?: unknown } | null)?.command;
  return typeof command === "string" ? { command } : {};
}

/** JSON.stringify replacer: bigints as strings, so no record fails to serialise. */
function jsonSafe(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString() : value;
}
