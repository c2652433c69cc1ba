/**
 * The exit-code contract of every harness command, documented in the README and tested end to end.
 * `harness exec` is the exception that mirrors the command: it exits with the command's own code.
 */
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
  /** Interrupted by Ctrl-C. */
  interrupted: 130,
} as const;
