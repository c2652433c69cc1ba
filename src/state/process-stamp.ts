/**
 * Which process wrote a record, told apart from a later process that got the same pid: the pid
 * plus the process's start time (field 22 of /proc/PID/stat, in clock ticks since boot). A record
 * whose process is gone was left by a crash (SIGKILL, OOM, power): an interrupted run or apply.
 */
import { readFileSync } from "node:fs";

export interface ProcessStamp {
  pid: number;
  /** Start time in clock ticks since boot; undefined without /proc (then the pid alone is checked). */
  started?: number | undefined;
}

function startTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "latin1");
    // The command name (field 2) is in parentheses and may hold spaces or ')': count after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = Number(fields[19]);
    return Number.isFinite(ticks) ? ticks : undefined;
  } catch {
    return undefined;
  }
}

/** This process's stamp. */
export function ownStamp(): ProcessStamp {
  return { pid: process.pid, started: startTicks(process.pid) };
}

/** True while the process that wrote `stamp` still runs (the same process, not a reused pid). */
export function stampAlive(stamp: ProcessStamp): boolean {
  try {
    process.kill(stamp.pid, 0);
  } catch (error) {
    // EPERM: a process of another user holds the pid; it exists.
    if ((error as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  if (stamp.started === undefined) return true;
  const now = startTicks(stamp.pid);
  return now === undefined || now === stamp.started;
}
