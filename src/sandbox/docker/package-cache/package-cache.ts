/**
 * The package cache before a sandbox opens: the workspace's volume made if missing, then
 * cache-prune.py in a throwaway container (the sandbox's image, no network, root with CHOWN,
 * DAC_OVERRIDE and FOWNER only) gives a new volume to the sandbox user and, every so often, deletes
 * the least recently used files of all the user's caches together when they hold more than the
 * bound; the caches of workspaces that are gone are removed then. The bound is over all of one
 * user's caches (one per workspace) and holds at each open that checks it; a task may grow its cache
 * past it while it runs (as it may fill the workspace), and a later open prunes it back.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import createDebug from "debug";
import type Docker from "dockerode";
import { harnessStateDir } from "../../../state/state-dir.js";
import { parseUserIds } from "../../sandbox-user.js";
import { runCacheKeeper } from "./package-cache-keeper.js";
import {
  ensurePackageCacheVolume,
  listPackageCacheVolumes,
  removeUnusedVolume,
} from "./package-cache-volume.js";

const log = createDebug("harness:package-cache");

/**
 * A user's caches the keeper checked this recently, against the same bound, are not checked again:
 * its container costs each open some 60 ms, and `harness exec` run after run would pay it every time
 * for nothing. The bound is a soft one anyway (a task may grow its cache while it runs).
 */
const KEEP_EVERY_MS = 10 * 60_000;

/** Harness's own record (in its state directory, which no sandbox can write) of the user's last check. */
function keptRecord(uid: number): string {
  return join(harnessStateDir(), "package-cache", `uid-${uid}.kept`);
}

function keptRecently(uid: number, maxBytes: number): boolean {
  try {
    const record = keptRecord(uid);
    const age = Date.now() - statSync(record).mtimeMs;
    return age >= 0 && age < KEEP_EVERY_MS && readFileSync(record, "utf8") === String(maxBytes);
  } catch {
    return false;
  }
}

function recordKept(uid: number, maxBytes: number): void {
  try {
    mkdirSync(dirname(keptRecord(uid)), { recursive: true, mode: 0o700 });
    writeFileSync(keptRecord(uid), String(maxBytes), { mode: 0o600 });
  } catch (error) {
    log("cannot record the keeper's run: %s", (error as Error).message);
  }
}

/** The cache a sandbox mounts, and its keeper's run. */
export interface PackageCache {
  volume: string;
  /**
   * Settles once the keeper has pruned the caches (it runs beside the container's start).
   * Contract: never rejects; a failure is one line through `onProgress`.
   */
  ready: Promise<void>;
}

/**
 * Before a sandbox opens: the workspace's cache volume. A new volume's keeper runs first, since the
 * volume is root's until it has; the bound's check over all the user's caches (every
 * KEEP_EVERY_MS) runs with it, or beside the container's start (~0.7 s here) for an existing volume,
 * to be awaited through `ready` before any command. Resolves undefined (and one line through
 * `onProgress`) when there is no cache to have: the run goes on without it rather than fail over it.
 */
export async function openPackageCache(
  docker: Docker,
  image: string,
  user: string,
  maxBytes: number,
  workspace: string,
  onProgress?: (line: string) => void,
): Promise<PackageCache | undefined> {
  const off = (error: unknown) =>
    onProgress?.(`package cache off for this run: ${(error as Error).message.split("\n")[0]}`);
  const { uid } = parseUserIds(user);
  let volume: { name: string; created: boolean };
  try {
    volume = await ensurePackageCacheVolume(docker, uid, workspace);
  } catch (error) {
    off(error);
    return undefined;
  }
  const due = !keptRecently(uid, maxBytes);
  /** The keeper on this workspace's volume alone, or (when the check is due) on every cache of the user. */
  const keep = async () => {
    const all = due ? await listPackageCacheVolumes(docker, { uid }) : [];
    // A cache whose workspace is gone from this machine serves nobody: removed, not pruned.
    const live = all.filter(
      (v) => v.workspace !== undefined && (v.name === volume.name || existsSync(v.workspace)),
    );
    const names = new Set([volume.name, ...live.map((v) => v.name)]);
    const sizes = await runCacheKeeper(docker, [...names], image, user, maxBytes);
    if (!due) return;
    recordKept(uid, maxBytes);
    if (sizes.removed > 0)
      onProgress?.(
        `package caches of uid ${uid} over their bound (${sizes.before} bytes in ${names.size} > ${maxBytes}): removed the ${sizes.removed} least recently used files, ${sizes.after} bytes left`,
      );
    for (const gone of all.filter((v) => !names.has(v.name))) {
      const removed = await removeUnusedVolume(docker, gone.name);
      // The one cache harness once shared among all of a user's workspaces: nothing mounts it any
      // more, and what one task planted there must not wait for anyone.
      if (removed && gone.workspace === undefined)
        onProgress?.(`removed ${gone.name}, the package cache once shared by all of uid ${uid}'s workspaces`);
    }
  };
  if (!volume.created && !due) return { volume: volume.name, ready: Promise.resolve() };
  if (!volume.created)
    return {
      volume: volume.name,
      ready: keep().catch((error: unknown) =>
        onProgress?.(`package cache not pruned: ${(error as Error).message.split("\n")[0]}`),
      ),
    };
  try {
    await keep();
    return { volume: volume.name, ready: Promise.resolve() };
  } catch (error) {
    // Left root's, the volume would refuse every later task's writes: made again next time.
    await docker
      .getVolume(volume.name)
      .remove()
      .catch(() => {});
    off(error);
    return undefined;
  }
}
