/** Turning a failed model call into how the run ends. */
import { CanceledError, HarnessError, ModelError } from "../errors.js";
import type { RunEnd } from "./agent-types.js";

/** An API 400 that says the prompt is too big: the API's older way of reporting a full context window. */
const CONTEXT_ERROR =
  /prompt is too long|exceed context limit|context window|context length|too many (input )?tokens/i;

export function modelFailure(error: unknown, signal: AbortSignal | undefined): RunEnd {
  if (error instanceof CanceledError || signal?.aborted) return { status: "canceled" };
  if (error instanceof ModelError && error.status === 400 && CONTEXT_ERROR.test(error.message)) {
    return { status: "context_window", error };
  }
  return { status: "error", error: asHarnessError(error, "The model client failed") };
}

export function asHarnessError(error: unknown, what: string): HarnessError {
  if (error instanceof HarnessError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new HarnessError(`${what}: ${message}`, { cause: error });
}
