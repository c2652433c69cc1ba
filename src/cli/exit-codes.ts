/**
 * The exit-code contract of every harness command, documented in the README and tested end to end:
 * the one place that turns how something ended into a process exit code. `harness exec` is the
 * exception that mirrors the command: it exits with the command's own code.
 */
import type { ExitStatus } from "../agent/exit-status.js";

export const EXIT = {
  /** The run finished: the model ended its turn. */
  ok: 0,
  /** Infrastructure failed: the model API (after retries) or Docker. */
  error: 1,
  /** Bad usage or configuration: flags, missing key or model, unreadable workspace. */
  usage: 2,
  /** A turn limit or a token/cost budget was reached. */
  limit: 3,
  /** The model refused, or could not go on (context window full, repeated malformed output). */
  modelStopped: 4,
  /** `harness replay`: a replayed command's exit code or output differed from the recording. */
  diverged: 5,
  /** `harness exec`: the command timed out (as timeout(1) reports it). */
  timedOut: 124,
  /**
   * `harness exec`: the reader of its stdout or stderr went away (`| head -1`), so the command was
   * killed; 128 + SIGPIPE, as a shell reports a pipeline member that SIGPIPE ended.
   */
  brokenPipe: 141,
  /** Interrupted by Ctrl-C (128 + SIGINT, shell style). */
  interrupted: 130,
} as const;

/**
 * `harness run`'s exit code per way a run can end. `usage` (2) is never a run's: the CLI returns it
 * before a run starts.
 */
const RUN_EXIT: Readonly<Record<ExitStatus, number>> = Object.freeze({
  submitted: EXIT.ok,
  error: EXIT.error,
  step_limit: EXIT.limit,
  cost_limit: EXIT.limit,
  refusal: EXIT.modelStopped,
  format_errors: EXIT.modelStopped,
  context_window: EXIT.modelStopped,
  canceled: EXIT.interrupted,
});

/** The process exit code for a run that ended with `status`. */
export function exitCodeFor(status: ExitStatus): number {
  return RUN_EXIT[status];
}
