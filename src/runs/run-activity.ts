/**
 * Whether a run may still be writing: its process is alive (the run id ends with its pid), or one of
 * its files changed within the last minute (a run from another machine sharing the state directory,
 * or one whose pid was not recorded). Such a run is never pruned and `runs rm` refuses it.
 *
 * A pid can be reused by an unrelated process; that only keeps one old run a while longer, which is
 * the safe side.
 */
import { existsSync } from "node:fs";
import { pidOfRunId } from "./state-paths.js";

/** Files changed within this many ms count as in use. */
export const RECENT_WRITE_MS = 60_000;

const HAS_PROC = process.platform === "linux" && existsSync("/proc/self");

/** True when a process with this pid exists (EPERM: it exists, owned by someone else). */
export function isProcessAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  // Listing thousands of runs: kill(pid, 0) throws an Error for every dead pid, a /proc look does not.
  if (HAS_PROC) return existsSync(`/proc/${pid}`);
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

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
