/**
 * Which process wrote a record, told apart from a later process that got the same pid: the pid plus
 * the process's start time (liveness.ts). A record whose process is gone was left by a crash
 * (SIGKILL, the OOM killer): an interrupted run or apply.
 */
import { hostname } from "node:os";
import { isProcessAlive, processStartTime } from "./liveness.js";

export interface ProcessStamp {
  pid: number;
  /** Start time in clock ticks after boot; undefined without /proc (then the pid alone is checked). */
  started?: string | undefined;
  /** The machine: a stamp from another one (a shared state directory) cannot be checked here. */
  host?: string | undefined;
}

/** This process's stamp. */
export function ownStamp(): ProcessStamp {
  return { pid: process.pid, started: processStartTime(process.pid), host: hostname() };
}

/**
 * True while the process that wrote `stamp` may still run: the same process (not a reused pid) is
 * alive, or the stamp is from another machine.
 */
export function stampAlive(stamp: ProcessStamp): boolean {
  if (stamp.host !== undefined && stamp.host !== hostname()) return true;
  if (!isProcessAlive(stamp.pid)) return false;
  if (stamp.started === undefined) return true;
  const now = processStartTime(stamp.pid);
  return now === undefined || now === stamp.started;
}
