/**
 * Which harness processes use a sandbox container right now. Bind mode ends every process left in
 * the container when a run ends, so that nothing keeps writing the workspace unwatched; while
 * another harness process still uses the container (a `harness exec` during a `run`), that would kill
 * its commands and its executor. The last one out does it instead.
 *
 * Kept on the host, in harness's state directory, never in the container: a command could fake any
 * sign of "someone else is attached" inside it, to keep its processes alive after the run. One empty
 * file per sandbox, named by its process's pid and start time (and a random part), so a dead
 * process's lease (or a reused pid) is recognised and removed.
 */

import { randomBytes } from "node:crypto";
import { rmdirSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { openHostFile } from "../host-files/host-file.js";
import { type HostDir, openHostDir } from "../host-files/host-path.js";
import { isProcessAlive, processStartTime } from "./liveness.js";
import { harnessStateDir } from "./state-dir.js";

export interface ContainerLease {
  /** Whether another live harness process holds a lease on the same container. */
  othersAlive(): Promise<boolean>;
  /** Gives the lease up; harmless to call twice. */
  release(): Promise<void>;
}

/** Takes this process's lease on `containerId`. Never throws: without a lease, nobody else waits for us. */
export async function takeLease(
  containerId: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ContainerLease> {
  const dir = join(harnessStateDir(env), "leases", containerId.slice(0, 64));
  // A random part too: two sandboxes of one process on one container are two holders.
  const mine = `${leaseName(process.pid)}-${randomBytes(4).toString("hex")}`;
  try {
    withLeaseDir(dir, 0o700, (held) => openHostFile(held, mine, { mode: 0o600, exclusive: true }).close());
  } catch {
    // A read-only or missing state directory: the run works, it just cannot see others (or be seen).
  }
  return {
    async othersAlive() {
      return (
        withLeaseDir(dir, undefined, (held) => {
          let alive = false;
          for (const name of held.list()) {
            if (name === mine) continue;
            if (isLive(name)) alive = true;
            else rmQuietly(held.at(name));
          }
          return alive;
        }) ?? false
      );
    },
    async release() {
      withLeaseDir(dir, undefined, (held) => rmQuietly(held.at(mine)));
      // The directory goes with its last lease; another process's new lease makes it again.
      withLeaseDir(dirname(dir), undefined, (held) => {
        try {
          rmdirSync(held.at(basename(dir)));
        } catch {
          // Not empty, or gone: either way not ours to remove now.
        }
      });
    },
  };
}

/**
 * Whether any live harness process holds a lease on `containerId` (a process that has not taken one
 * yet, still opening, is not seen: callers judge the creator by the container's owner labels).
 */
export function leasedByLiveProcess(containerId: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const dir = join(harnessStateDir(env), "leases", containerId.slice(0, 64));
  return withLeaseDir(dir, undefined, (held) => held.list().some(isLive)) ?? false;
}

/**
 * `use` on the leases directory, held open and reached without a link in it (host-files/: the state
 * directory may lie in a workspace); undefined when it is missing or refused.
 */
function withLeaseDir<T>(
  dir: string,
  createMode: number | undefined,
  use: (held: HostDir) => T,
): T | undefined {
  let held: HostDir;
  try {
    held = openHostDir(dir, createMode);
  } catch (error) {
    if (createMode !== undefined) throw error;
    return undefined;
  }
  try {
    return use(held);
  } finally {
    held.close();
  }
}

/** Removes one name (a link itself, never what it leads to); never throws. */
function rmQuietly(path: string): void {
  try {
    rmSync(path, { force: true });
  } catch {
    // A directory planted at a lease's name, or gone meanwhile: left alone.
  }
}

/** `PID-STARTTIME`; the start time is "0" where /proc cannot say (macOS, Windows). */
function leaseName(pid: number): string {
  return `${pid}-${processStartTime(pid) ?? "0"}`;
}

function isLive(name: string): boolean {
  const match = /^(\d+)-(\d+)(-[0-9a-f]+)?$/.exec(name);
  if (!match) return false;
  const pid = Number(match[1]);
  if (!isProcessAlive(pid)) return false;
  const start = processStartTime(pid);
  return start === undefined || match[2] === "0" || start === match[2];
}
