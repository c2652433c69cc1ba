/**
 * The package cache's keeper: cache-prune.py in a throwaway container (the sandbox's image, no
 * network, read-only root, root with CHOWN, DAC_OVERRIDE and FOWNER only, `no-new-privileges`), with
 * every volume it is given mounted side by side; harness takes one JSON line of numbers from it.
 */
import createDebug from "debug";
import type Docker from "dockerode";
import { SandboxError } from "../../../errors.js";
import { programText } from "../../exec/program-text.js";
import { parseUserIds } from "../../sandbox-user.js";
import { seccompSecurityOpt } from "../container/seccomp-profile.js";
import { Demuxer } from "../exec/demux.js";
import { sandboxError } from "../exec/docker-errors.js";
import { KEEPER_LABEL_VALUE, LABEL_PACKAGE_CACHE } from "./package-cache-volume.js";

const log = createDebug("harness:package-cache");

/** Where the keeper's container sees the volumes: one directory per volume, named as it. */
const KEEPER_MOUNT = "/cache";
/**
 * A cache of a few GiB is some 100,000 files: seconds to walk. Past this the keeper is killed and the
 * sandbox opens unpruned (a task that planted millions of empty files delays its user's next open by
 * this much, no more).
 */
const KEEPER_DEADLINE_MS = 60_000;

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

function keeperOptions(
  volumes: readonly string[],
  image: string,
  cmd: string[],
): Docker.ContainerCreateOptions {
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
      Mounts: volumes.map((volume) => ({
        Type: "volume" as const,
        Source: volume,
        Target: `${KEEPER_MOUNT}/${volume}`,
        ReadOnly: false,
      })),
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
 * Runs cache-prune.py on `volumes` together (the bound is over all of them) and resolves what it
 * measured; `maxBytes` -1 only measures. Rejects with a SandboxError when it could not run or said
 * something else than its numbers.
 */
export async function runCacheKeeper(
  docker: Docker,
  volumes: readonly string[],
  image: string,
  user: string,
  maxBytes: number,
): Promise<CacheSizes> {
  const { uid, gid } = parseUserIds(user);
  const container = await docker
    .createContainer(keeperOptions(volumes, image, keeperCommand(maxBytes, uid, gid)))
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
    log("%s: %d bytes before, %d after, %d files removed", volumes, sizes.before, sizes.after, sizes.removed);
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
