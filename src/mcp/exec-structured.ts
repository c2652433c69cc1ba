/**
 * A command's result as MCP structured content (`harness mcp --structured-content`): stdout, stderr
 * and the exit code as fields of their own, so a program driving harness need not parse the text the
 * model gets. The bash tool then declares `EXEC_OUTPUT_SCHEMA` as its `outputSchema`, and every
 * result it answers with structured content is valid against it (the spec's MUST; the SDK clients
 * check it): each field below is always of the type declared, whatever ended the command.
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
      description:
        "The shell's exit code. A command killed on its timeout or a cancel has the code of the signal that killed it (143 for SIGTERM, 137 for SIGKILL): timedOut and canceled say why. null when there is none: the command never started, or its end was not seen.",
    },
    timedOut: { type: "boolean", description: "Killed because it ran past its timeout." },
    canceled: { type: "boolean", description: "Killed because the client cancelled the call." },
    truncated: {
      type: "boolean",
      description: "stdout or stderr was cut in the middle; outputId names the whole when it was kept.",
    },
    outputId: {
      type: "string",
      description:
        "Present when the output was cut and the whole was kept: the id to read it with the read_output tool (by line range or grep).",
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
  required: [
    "stdout",
    "stderr",
    "exitCode",
    "timedOut",
    "canceled",
    "truncated",
    "stdoutBytes",
    "stderrBytes",
    "durationMs",
    "background",
  ],
};

/** `outputId`: where the whole of a cut output was kept (the tool result's). */
export function execStructured(exec: ExecResult, outputId?: string): Record<string, unknown> {
  return {
    stdout: exec.stdout,
    stderr: exec.stderr,
    exitCode: exec.exitCode ?? null,
    timedOut: exec.timedOut,
    canceled: exec.isCanceled,
    truncated: exec.isTruncated,
    ...(outputId === undefined ? {} : { outputId }),
    stdoutBytes: exec.stdoutBytes,
    stderrBytes: exec.stderrBytes,
    durationMs: exec.durationMs,
    background: (exec.background ?? []).map(({ command, ageSeconds }) => ({ command, ageSeconds })),
  };
}
