/**
 * The package cache before a sandbox opens: the user's volume made if missing, then cache-prune.py
 * in a throwaway container (the sandbox's image, no network, root with CHOWN, DAC_OVERRIDE and
 * FOWNER only) gives the volume to the sandbox user and deletes the least recently used files when
 * the cache is over its bound. The bound holds at each open; a task may grow the cache past it while
 * it runs (as it may fill the workspace), and the next open prunes it back.
 */
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import createDebug from "debug";
import type Docker from "dockerode";
import { SandboxError } from "../../../errors.js";
import { harnessStateDir } from "../../../state/state-dir.js";
import { programText } from "../../exec/program-text.js";
import { parseUserIds } from "../../sandbox-user.js";
import { seccompSecurityOpt } from "../container/seccomp-profile.js";
import { Demuxer } from "../exec/demux.js";
import { sandboxError } from "../exec/docker-errors.js";
import { ensurePackageCacheVolume, KEEPER_LABEL_VALUE, LABEL_PACKAGE_CACHE } from "./package-cache-volume.js";

const log = createDebug("harness:package-cache");

/** Where the keeper's container sees the volume. */
const KEEPER_MOUNT = "/cache";
/**
 * A cache of a few GiB is some 100,000 files: seconds to walk. Past this the keeper is killed and the
 * sandbox opens unpruned (a task that planted millions of empty files delays its user's next open by
 * this much, no more).
 */
const KEEPER_DEADLINE_MS = 60_000;
/**
 * A cache the keeper checked this recently, against the same bound, is not checked again: its
 * container costs each open some 60 ms, and `harness exec` run after run on one workspace would pay
 * it every time for nothing. The bound is a soft one anyway (a task may grow the cache while it runs).
 */
const KEEP_EVERY_MS = 10 * 60_000;

/** Harness's own record (in its state directory, which no sandbox can write) of the last check. */
function keptRecord(volume: string): string {
  return join(harnessStateDir(), "package-cache", `${volume}.kept`);
}

function keptRecently(volume: string, maxBytes: number): boolean {
  try {
    const record = keptRecord(volume);
    const age = Date.now() - statSync(record).mtimeMs;
    return age >= 0 && age < KEEP_EVERY_MS && readFileSync(record, "utf8") === String(maxBytes);
  } catch {
    return false;
  }
}

function recordKept(volume: string, maxBytes: number): void {
  try {
    mkdirSync(dirname(keptRecord(volume)), { recursive: true, mode: 0o700 });
    writeFileSync(keptRecord(volume), String(maxBytes), { mode: 0o600 });
  } catch (error) {
    log("cannot record the keeper's run: %s", (error as Error).message);
  }
}

/** What cache-prune.py measured: bytes on disk (blocks), before and after pruning. */
export interface CacheSizes {
  before: number;
  after: number;
  /** Files deleted to get under the bound. */
  removed: number;
  files: number;
}

function keeperCommand(maxBytes: number, uid: number, gid: number): string[] {
  const source = programText(new URL("./cache-prune.py", import.meta.url));
  const launch = `command -v python3 >/dev/null 2>&1 || { echo 'the image has no python3' >&2; exit 127; }; exec python3 -I -S -c "$1" "$2" "$3" "$4" "$5"`;
  return [
    "/bin/sh",
    "-c",
    launch,
    "harness-cache-prune",
    source,
    KEEPER_MOUNT,
    `${uid}`,
    `${gid}`,
    `${maxBytes}`,
  ];
}

function keeperOptions(volume: string, image: string, cmd: string[]): Docker.ContainerCreateOptions {
  return {
    Image: image,
    Cmd: cmd,
    User: "0:0",
    Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"],
    NetworkDisabled: true,
    // Not LABEL_MANAGED: no workspace's sandbox, so `harness ps`, `rm` and the bind-mode quiesce
    // leave it alone; `rm --cache` removes one a killed harness left behind.
    Labels: { [LABEL_PACKAGE_CACHE]: KEEPER_LABEL_VALUE },
    HostConfig: {
      Mounts: [{ Type: "volume", Source: volume, Target: KEEPER_MOUNT, ReadOnly: false }],
      NetworkMode: "none",
      CapDrop: ["ALL"],
      // CHOWN: a new volume is root's. DAC_OVERRIDE, FOWNER: a task may have made its files unwritable.
      CapAdd: ["CHOWN", "DAC_OVERRIDE", "FOWNER"],
      SecurityOpt: ["no-new-privileges:true", seccompSecurityOpt()],
      ReadonlyRootfs: true,
      Memory: 256 * 1024 ** 2,
      MemorySwap: 256 * 1024 ** 2,
      NanoCpus: 1e9,
      PidsLimit: 16,
      RestartPolicy: { Name: "no" },
    },
  };
}

function parseSizes(text: string): CacheSizes {
  const parsed = JSON.parse(text.trim().split("\n").at(-1) ?? "") as Record<string, unknown>;
  const numbers = ["before", "after", "removed", "files"].map((key) => parsed[key]);
  if (!numbers.every((n) => typeof n === "number" && Number.isSafeInteger(n) && n >= 0))
    throw new Error(`unexpected answer: ${text.slice(0, 200)}`);
  const [before, after, removed, files] = numbers as number[];
  return { before: before ?? 0, after: after ?? 0, removed: removed ?? 0, files: files ?? 0 };
}

/**
 * Runs cache-prune.py on `volume` and resolves what it measured; `maxBytes` -1 only measures.
 * Rejects with a SandboxError when it could not run or said something else than its numbers.
 */
export async function runCacheKeeper(
  docker: Docker,
  volume: string,
  image: string,
  user: string,
  maxBytes: number,
): Promise<CacheSizes> {
  const { uid, gid } = parseUserIds(user);
  const container = await docker
    .createContainer(keeperOptions(volume, image, keeperCommand(maxBytes, uid, gid)))
    .catch((error: unknown) => {
      throw sandboxError("creating the package cache's keeper failed", error);
    });
  let timer: NodeJS.Timeout | undefined;
  try {
    await container.start();
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`still running after ${KEEPER_DEADLINE_MS} ms`)),
        KEEPER_DEADLINE_MS,
      );
    });
    const { StatusCode } = (await Promise.race([container.wait(), deadline])) as { StatusCode: number };
    const logs = await container.logs({ stdout: true, stderr: true, follow: false });
    const text = demuxLogs(logs);
    if (StatusCode !== 0) throw new Error(`exited with ${StatusCode}: ${text.stderr.trim().slice(-300)}`);
    const sizes = parseSizes(text.stdout);
    log("%s: %d bytes before, %d after, %d files removed", volume, sizes.before, sizes.after, sizes.removed);
    return sizes;
  } catch (error) {
    if (error instanceof SandboxError) throw error;
    throw sandboxError("the package cache's keeper failed", error, container.id);
  } finally {
    clearTimeout(timer);
    await container.remove({ force: true }).catch(() => {});
  }
}

/** The engine's multiplexed log stream (Tty false), split into stdout and stderr. */
function demuxLogs(raw: Buffer): { stdout: string; stderr: string } {
  const parts = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  new Demuxer((name, payload) => parts[name].push(payload)).push(raw);
  return {
    stdout: Buffer.concat(parts.stdout).toString("utf8"),
    stderr: Buffer.concat(parts.stderr).toString("utf8"),
  };
}

/** The cache a sandbox mounts, and its keeper's run. */
export interface PackageCache {
  volume: string;
  /**
   * Settles once the keeper has pruned the cache (it runs beside the container's start).
   * Contract: never rejects; a failure is one line through `onProgress`.
   */
  ready: Promise<void>;
}

/**
 * Before a sandbox opens: the user's cache volume. A new volume's keeper runs first, since the
 * volume is root's until it has; an existing one's runs beside the container's start (~0.7 s here),
 * to be awaited through `ready` before any command. Resolves undefined (and one line through
 * `onProgress`) when there is no cache to have: the run goes on without it rather than fail over it.
 */
export async function openPackageCache(
  docker: Docker,
  image: string,
  user: string,
  maxBytes: number,
  onProgress?: (line: string) => void,
): Promise<PackageCache | undefined> {
  const off = (error: unknown) =>
    onProgress?.(`package cache off for this run: ${(error as Error).message.split("\n")[0]}`);
  const keep = async (volume: string) => {
    const sizes = await runCacheKeeper(docker, volume, image, user, maxBytes);
    recordKept(volume, maxBytes);
    if (sizes.removed > 0)
      onProgress?.(
        `package cache over its bound (${sizes.before} bytes > ${maxBytes}): removed the ${sizes.removed} least recently used files, ${sizes.after} bytes left`,
      );
  };
  let volume: { name: string; created: boolean };
  try {
    volume = await ensurePackageCacheVolume(docker, parseUserIds(user).uid);
  } catch (error) {
    off(error);
    return undefined;
  }
  if (!volume.created && keptRecently(volume.name, maxBytes))
    return { volume: volume.name, ready: Promise.resolve() };
  if (!volume.created)
    return {
      volume: volume.name,
      ready: keep(volume.name).catch((error: unknown) =>
        onProgress?.(`package cache not pruned: ${(error as Error).message.split("\n")[0]}`),
      ),
    };
  try {
    await keep(volume.name);
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
