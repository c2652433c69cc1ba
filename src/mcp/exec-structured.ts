/**
 * A command's result as MCP structured content: stdout, stderr and the exit code as fields of their
 * own, so an MCP client need not parse the text the model gets.
 */
import type { ExecResult } from "../sandbox/sandbox.js";

/** JSON Schema of `execStructured`'s answer: the bash tool's `outputSchema`. */
export const EXEC_OUTPUT_SCHEMA = {
  type: "object" as const,
  properties: {
    stdout: { type: "string", description: "Standard output (head and tail kept when cut)." },
    stderr: { type: "string", description: "Standard error, apart from stdout, cut the same way." },
    exitCode: {
      type: ["integer", "null"],
      description: "The exit code; null when the command never returned one (killed on its timeout).",
    },
    timedOut: { type: "boolean", description: "Killed because it ran past its timeout." },
    canceled: { type: "boolean", description: "Killed because the client cancelled the call." },
    truncated: {
      type: "boolean",
      description:
        "stdout or stderr was cut; the text result names the id to read the whole with read_output.",
    },
    stdoutBytes: { type: "integer", description: "Bytes written to stdout, cut or not." },
    stderrBytes: { type: "integer", description: "Bytes written to stderr, cut or not." },
    durationMs: { type: "number", description: "Wall-clock time of the command." },
    background: {
      type: "array",
      description: "Jobs still running in the sandbox's background after the command.",
      items: {
        type: "object",
        properties: { command: { type: "string" }, ageSeconds: { type: "number" } },
        required: ["command", "ageSeconds"],
      },
    },
  },
  required: ["stdout", "stderr", "exitCode", "timedOut", "canceled", "truncated"],
};

export function execStructured(exec: ExecResult): Record<string, unknown> {
  return {
    stdout: exec.stdout,
    stderr: exec.stderr,
    exitCode: exec.exitCode ?? null,
    timedOut: exec.timedOut,
    canceled: exec.isCanceled,
    truncated: exec.isTruncated,
    stdoutBytes: exec.stdoutBytes,
    stderrBytes: exec.stderrBytes,
    durationMs: exec.durationMs,
    background: (exec.background ?? []).map(({ command, ageSeconds }) => ({ command, ageSeconds })),
  };
}
