/** Turns any error into one line on stderr and an exit code: never a stack trace, unless DEBUG asks. */
import { CanceledError, ConfigError, HarnessError, ModelError } from "../errors.js";
import { sanitizeForTerminal } from "../terminal/sanitize.js";
import { EXIT } from "./exit-codes.js";

/**
 * `await using`'s `SuppressedError`: the body failed, then the disposal (the sandbox's stop) failed
 * too. The body's error is what went wrong first, and the one to report (the stop's is only its
 * consequence, e.g. an engine that went away); the stop's is kept for DEBUG.
 */
function primaryError(error: unknown): unknown {
  const suppressed = error as { name?: unknown; suppressed?: unknown } | null | undefined;
  if (suppressed?.name === "SuppressedError" && suppressed.suppressed !== undefined)
    return primaryError(suppressed.suppressed);
  return error;
}

export function exitCodeForError(error: unknown): number {
  error = primaryError(error);
  if (error instanceof CanceledError) return EXIT.interrupted;
  if (error instanceof ConfigError) return EXIT.usage;
  if (isCommanderUsageError(error)) return EXIT.usage;
  return EXIT.error;
}

export function describeError(error: unknown): string {
  error = primaryError(error);
  if (error instanceof ModelError && error.requestID)
    return `${error.message} (request id ${error.requestID})`;
  if (error instanceof HarnessError) return error.message;
  // A library may reject with a plain object (an event, a status): its message, never "[object Object]".
  const own = (error as { message?: unknown } | null | undefined)?.message;
  const message = error instanceof Error ? error.message : typeof own === "string" ? own : safeText(error);
  return `internal error: ${message} (set DEBUG=harness:* for details)`;
}

export function reportError(error: unknown, stderr: NodeJS.WritableStream = process.stderr): number {
  // A message can quote the sandbox (a path it made, a line a command printed).
  const line = describeError(error).split("\n")[0] ?? "";
  stderr.write(`harness: ${sanitizeForTerminal(line, { oneLine: true })}\n`);
  if (process.env["DEBUG"] && error instanceof Error && error.stack)
    stderr.write(`${sanitizeForTerminal(error.stack)}\n`);
  return exitCodeForError(error);
}

function isCommanderUsageError(error: unknown): boolean {
  return (
    typeof (error as { code?: unknown })?.code === "string" &&
    String((error as { code: string }).code).startsWith("commander.")
  );
}

function safeText(value: unknown): string {
  if (typeof value !== "object" || value === null) return String(value);
  try {
    return JSON.stringify(value).slice(0, 300);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
