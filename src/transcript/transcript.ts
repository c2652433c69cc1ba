/**
 * A JSONL record of a run, appended synchronously after every step, failed ones included, so a crash
 * or Ctrl-C keeps everything that happened up to it. It is an `AgentEvents` listener: combine it with
 * the terminal renderer via `combineEvents`.
 * Anchor: mini-swe-agent `agents/default.py` (`save()` in `finally` on every step).
 */
import { appendFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type { AgentEvents } from "../agent/events.js";

/** Record types, one per line: `{ "type": …, "time": ISO-8601, …fields }`. */
export type TranscriptRecordType =
  | "run_start"
  | "user"
  | "assistant"
  | "tool_call"
  | "tool_result"
  | "usage"
  | "notice"
  | "run_end";

export interface Transcript extends Required<Omit<AgentEvents, "onText" | "onToolOutput">> {
  /** The JSONL file. */
  readonly path: string;
  /** Appends one record now. Never throws: a transcript that cannot be written must not end the run. */
  write(type: TranscriptRecordType, fields: Record<string, unknown>): void;
}

export interface TranscriptOptions {
  /** Clock, for tests. */
  now?: () => Date;
  /** More facts for the run_start record, e.g. the per-command timeout (replay uses it). */
  runStart?: Record<string, unknown>;
}

export function createTranscript(path: string, options: TranscriptOptions = {}): Transcript {
  const now = options.now ?? (() => new Date());
  let directoryReady = false;

  const write = (type: TranscriptRecordType, fields: Record<string, unknown>) => {
    try {
      if (!directoryReady) {
        mkdirSync(dirname(path), { recursive: true });
        directoryReady = true;
      }
      const line = JSON.stringify(scrubSecrets({ type, time: now().toISOString(), ...fields }), jsonSafe);
      // Owner-only: a transcript holds the project's code and command output.
      appendFileSync(path, `${line}\n`, { encoding: "utf8", mode: 0o600 });
    } catch {
      // Logging must not end the run (disk full, read-only directory); the run itself goes on.
    }
  };

  return {
    path,
    write,
    onRunStart: (info) => write("run_start", { ...info, ...options.runStart }),
    onUserMessage: (text) => write("user", { text }),
    onAssistantTurn: (response) =>
      write("assistant", {
        id: response.id,
        model: response.model,
        stopReason: response.stopReason,
        content: response.content,
        usage: response.usage,
      }),
    onToolCall: (call) => write("tool_call", { id: call.id, name: call.name, input: call.input }),
    onToolResult: (call, result) => {
      const exec = result.exec;
      write("tool_result", {
        id: call.id,
        name: call.name,
        isError: result.isError,
        content: result.content,
        ...(exec === undefined
          ? // Not run (blocked, bad input, cancelled): still say which command it was.
            commandOf(call.input)
          : {
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
            }),
      });
    },
    onTurnUsage: (usage, total) => write("usage", { usage, total }),
    onNotice: (text) => write("notice", { text }),
    onRunEnd: (result) =>
      write("run_end", {
        status: result.status,
        turns: result.turns,
        usage: result.usage,
        finalText: result.finalText,
        ...(result.error === undefined ? {} : { error: errorFields(result.error) }),
      }),
  };
}

function commandOf(input: unknown): Record<string, unknown> {
  const command = (input as { command?: unknown } | null)?.command;
  return typeof command === "string" ? { command } : {};
}

function errorFields(error: Error): Record<string, unknown> {
  const fields: Record<string, unknown> = { name: error.name, message: error.message };
  for (const key of ["status", "requestID", "containerId"]) {
    const value = (error as unknown as Record<string, unknown>)[key];
    if (value !== undefined) fields[key] = value;
  }
  return fields;
}

/** JSON.stringify replacer: bigints as strings, so no record fails to serialise. */
function jsonSafe(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString() : value;
}

const API_KEY = /sk-ant-[A-Za-z0-9_-]+/g;
const SECRET_HEADER =
  /((?:x-api-key|authorization)["']?\s*[:=]\s*["']?)(?:(?:Bearer|Basic)\s+)?[^\s"',;}]+/gi;
const SECRET_KEY_NAME = /^(?:x-api-key|authorization|api[-_]?key|anthropic[-_]api[-_]key)$/i;

/**
 * A copy of `value` with anything that looks like an Anthropic key or an auth header value replaced by
 * "[REDACTED]". Harness never gives the transcript a key, but the model or a command can print one.
 */
export function scrubSecrets(value: unknown, seen: WeakSet<object> = new WeakSet()): unknown {
  if (typeof value === "string") {
    return value.replace(API_KEY, "sk-ant-[REDACTED]").replace(SECRET_HEADER, "$1[REDACTED]");
  }
  if (typeof value !== "object" || value === null) return value;
  if (value instanceof Error) return { name: value.name, message: scrubSecrets(value.message) };
  if (seen.has(value)) return "[Circular]";
  seen.add(value);
  let copy: unknown;
  if (Array.isArray(value)) {
    copy = value.map((item) => scrubSecrets(item, seen));
  } else {
    const fields: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      fields[key] =
        SECRET_KEY_NAME.test(key) && typeof item === "string" ? "[REDACTED]" : scrubSecrets(item, seen);
    }
    copy = fields;
  }
  // Only ancestors make a cycle: the same object in two places is written twice.
  seen.delete(value);
  return copy;
}
