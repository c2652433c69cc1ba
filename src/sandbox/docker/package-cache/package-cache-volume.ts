/**
 * The package cache's volume: one named volume per sandbox user, made and labelled by harness, so
 * that npm's and pip's downloads outlive the sandbox that made them. It lives in the engine, never
 * in a workspace, and nothing on the host reads it (cache-prune.py measures it in a container).
 */
import type Docker from "dockerode";
import { SandboxError } from "../../../errors.js";
import { LABEL_MANAGED } from "../container/labels.js";
import { dockerStatus, sandboxError } from "../exec/docker-errors.js";

/** On every cache volume, the value the uid whose cache it is; on the keeper's containers, "keeper". */
export const LABEL_PACKAGE_CACHE = "dev.harness.package-cache";
export const KEEPER_LABEL_VALUE = "keeper";

/**
 * Per uid, so two users of one engine never share a cache (nor its ownership): the volume's root
 * belongs to that uid, and only its tasks write there.
 */
export function packageCacheVolumeName(uid: number): string {
  return `harness-package-cache-${uid}`;
}

/** Creates the volume when missing. An existing volume not made by harness is refused. */
export async function ensurePackageCacheVolume(
  docker: Docker,
  uid: number,
): Promise<{ name: string; created: boolean }> {
  const name = packageCacheVolumeName(uid);
  const existing = await docker
    .getVolume(name)
    .inspect()
    .catch((error: unknown) => {
      if (dockerStatus(error) === 404) return undefined;
      throw sandboxError(`inspecting the package cache volume ${name} failed`, error);
    });
  if (existing === undefined) {
    await docker
      .createVolume({ Name: name, Labels: { [LABEL_MANAGED]: "true", [LABEL_PACKAGE_CACHE]: String(uid) } })
      .catch((error: unknown) => {
        throw sandboxError(`creating the package cache volume ${name} failed`, error);
      });
    return { name, created: true };
  }
  // Someone else's volume of that name: harness would hand it to a task, and prune it.
  if (existing.Labels?.[LABEL_PACKAGE_CACHE] !== String(uid))
    throw new SandboxError(
      `a volume named ${name} exists without harness's label; remove it, or turn the cache off with --no-package-cache`,
    );
  return { name, created: false };
}

/** Every package cache volume on the engine (only `uid`'s when given), by label. */
export async function listPackageCacheVolumes(docker: Docker, uid?: number): Promise<string[]> {
  const label = uid === undefined ? LABEL_PACKAGE_CACHE : `${LABEL_PACKAGE_CACHE}=${uid}`;
  const answer = await docker.listVolumes({ filters: { label: [label] } });
  return (answer.Volumes ?? []).map((v) => v.Name).sort();
}

/** Names of the containers (running or not) that mount `volume`: the engine keeps a volume they use. */
async function holdersOf(docker: Docker, volume: string): Promise<string[]> {
  const containers = await docker.listContainers({ all: true, filters: { volume: [volume] } });
  return containers.map((c) => (c.Names[0] ?? c.Id).replace(/^\//, ""));
}

/**
 * `harness rm --cache`: removes every package cache volume (only `uid`'s when given), and nothing else. A volume a container
 * still mounts (a workspace's long-lived sandbox keeps it) is refused by the engine; the error names
 * those containers, for `harness rm` to remove first.
 */
export async function removePackageCacheVolumes(docker: Docker, uid?: number): Promise<string[]> {
  // A keeper a killed harness left behind holds the volume; it is the cache's own, so it goes too.
  const keepers = await docker.listContainers({
    all: true,
    filters: { label: [`${LABEL_PACKAGE_CACHE}=${KEEPER_LABEL_VALUE}`] },
  });
  for (const keeper of keepers)
    await docker
      .getContainer(keeper.Id)
      .remove({ force: true })
      .catch(() => {});
  const removed: string[] = [];
  for (const name of await listPackageCacheVolumes(docker, uid)) {
    try {
      await docker.getVolume(name).remove();
      removed.push(name);
    } catch (error) {
      if (dockerStatus(error) === 404) continue;
      const holders = await holdersOf(docker, name).catch(() => []);
      if (holders.length === 0) throw sandboxError(`removing ${name} failed`, error);
      throw new SandboxError(
        `${name} is mounted by ${holders.join(", ")}: remove ${holders.length === 1 ? "that container" : "those containers"} first ('harness rm --workspace DIR', or 'harness rm --all')`,
        { cause: error },
      );
    }
  }
  return removed;
}
