/**
 * Whether a run may still be writing: its process is alive (the run id ends with its pid), or one of
 * its files changed within the last minute (a run from another machine sharing the state directory,
 * or one whose pid was not recorded). Such a run is never pruned and `runs rm` refuses it.
 *
 * A pid can be reused by an unrelated process; that only keeps one old run a while longer, which is
 * the safe side.
 */
import { isProcessAlive } from "../state/liveness.js";
import { pidOfRunId } from "../state/run-layout.js";

export { isProcessAlive };

/** Files changed within this many ms count as in use. */
export const RECENT_WRITE_MS = 60_000;

export interface ActivityOptions {
  /** Now, ms since the epoch. */
  now: number;
  /** Process check, for tests. */
  isAlive?: (pid: number) => boolean;
}

/** True when a file modified at `modifiedMs` may still be being written. */
export function isRecentlyWritten(modifiedMs: number, now: number): boolean {
  return now - modifiedMs < RECENT_WRITE_MS;
}

/** True when run `id`, last modified at `modifiedMs`, may still be running. */
export function isRunActive(id: string, modifiedMs: number, options: ActivityOptions): boolean {
  if (isRecentlyWritten(modifiedMs, options.now)) return true;
  const pid = pidOfRunId(id);
  return pid !== undefined && (options.isAlive ?? isProcessAlive)(pid);
}
