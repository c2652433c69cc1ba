/**
 * When a running command is to be killed: its timeout or the caller's signal, whichever comes
 * first. How it is killed is the command path's (a `K` frame to the executor, kill.sh from a fresh
 * exec).
 */

/** The longest delay setTimeout honours. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Why a command is being killed. */
export type KillCause = "timeout" | "cancel";

/**
 * Calls `kill` once the timeout passes or `signal` aborts (at once if it already has); the returned
 * function disarms both.
 */
export function armKill(
  timeoutMs: number,
  signal: AbortSignal | undefined,
  kill: (cause: KillCause) => void,
): () => void {
  // setTimeout fires at once for delays past 2^31-1 ms (~24.8 days): cap instead of overflowing.
  const timer = setTimeout(() => kill("timeout"), Math.min(timeoutMs, MAX_TIMER_MS));
  const onAbort = () => kill("cancel");
  if (signal?.aborted) onAbort();
  else signal?.addEventListener("abort", onAbort, { once: true });
  return () => {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  };
}
