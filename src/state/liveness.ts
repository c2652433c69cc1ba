/**
 * Whether a process harness recorded (in a lease, a run id, a socket's name, a container label) is
 * still the one it recorded. One answer for every caller: EPERM means it exists, as another user's.
 */
import { existsSync, readFileSync } from "node:fs";

const HAS_PROC = process.platform === "linux" && existsSync("/proc/self");

/** True when a process with this pid exists. */
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

/**
 * The process's start time in clock ticks after boot (/proc/PID/stat field 22), so that a pid reused
 * by another process is not taken for the one recorded; undefined without a /proc or a process.
 */
export function processStartTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19];
  } catch {
    return undefined;
  }
}
