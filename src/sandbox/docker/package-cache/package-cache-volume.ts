/**
 * The package cache's volumes: one named volume per workspace and sandbox user, made and labelled by
 * harness, so that npm's and pip's downloads outlive the sandbox that made them. They live in the
 * engine, never in a workspace, and nothing on the host reads them (cache-prune.py measures them in
 * a container).
 *
 * Per workspace, not per user: a cache is written by the tasks that use it, and npm and pip trust
 * what they find there (an unpinned install takes a planted packument or index page and the package
 * it names), so one cache shared by every workspace let a task in one workspace choose what a task
 * in another installed. Tasks of one workspace still share its cache, as they share the workspace.
 */
import { createHash } from "node:crypto";
import type Docker from "dockerode";
import { SandboxError } from "../../../errors.js";
import { LABEL_MANAGED, LABEL_WORKSPACE } from "../container/labels.js";
import { dockerStatus, sandboxError } from "../exec/docker-errors.js";

/** On every cache volume, the value the uid whose cache it is; on the keeper's containers, "keeper". */
export const LABEL_PACKAGE_CACHE = "dev.harness.package-cache";
export const KEEPER_LABEL_VALUE = "keeper";

/** A cache volume as the engine lists it. */
export interface CacheVolume {
  name: string;
  uid: number;
  /**
   * The workspace (real path) whose cache it is; undefined for the one volume per user that harness
   * once shared among all of that user's workspaces, which no sandbox mounts any more.
   */
  workspace: string | undefined;
}

/**
 * Per workspace (its real path, hashed: names are short and safe) and per uid, so two users of one
 * engine never share a cache (nor its ownership): the volume's root belongs to that uid.
 */
export function packageCacheVolumeName(uid: number, workspace: string): string {
  const hash = createHash("sha256").update(workspace).digest("hex").slice(0, 16);
  return `harness-package-cache-${uid}-${hash}`;
}

/** Creates the workspace's volume when missing. An existing volume not made by harness for it is refused. */
export async function ensurePackageCacheVolume(
  docker: Docker,
  uid: number,
  workspace: string,
): Promise<{ name: string; created: boolean }> {
  const name = packageCacheVolumeName(uid, workspace);
  const existing = await docker
    .getVolume(name)
    .inspect()
    .catch((error: unknown) => {
      if (dockerStatus(error) === 404) return undefined;
      throw sandboxError(`inspecting the package cache volume ${name} failed`, error);
    });
  if (existing === undefined) {
    await docker
      .createVolume({
        Name: name,
        Labels: { [LABEL_MANAGED]: "true", [LABEL_PACKAGE_CACHE]: String(uid), [LABEL_WORKSPACE]: workspace },
      })
      .catch((error: unknown) => {
        throw sandboxError(`creating the package cache volume ${name} failed`, error);
      });
    return { name, created: true };
  }
  // Someone else's volume of that name: harness would hand it to a task, and prune it.
  const labels = existing.Labels ?? {};
  if (labels[LABEL_PACKAGE_CACHE] !== String(uid) || labels[LABEL_WORKSPACE] !== workspace)
    throw new SandboxError(
      `a volume named ${name} exists without harness's labels for this workspace; remove it, or turn the cache off with --no-package-cache`,
    );
  return { name, created: false };
}

/** Every package cache volume on the engine (only `uid`'s, or one workspace's, when given), by label. */
export async function listPackageCacheVolumes(
  docker: Docker,
  filter: { uid?: number | undefined; workspace?: string | undefined } = {},
): Promise<CacheVolume[]> {
  const label = [filter.uid === undefined ? LABEL_PACKAGE_CACHE : `${LABEL_PACKAGE_CACHE}=${filter.uid}`];
  if (filter.workspace !== undefined) label.push(`${LABEL_WORKSPACE}=${filter.workspace}`);
  const answer = await docker.listVolumes({ filters: { label } });
  return (answer.Volumes ?? [])
    .map((v) => ({
      name: v.Name,
      uid: Number(v.Labels?.[LABEL_PACKAGE_CACHE]),
      workspace: v.Labels?.[LABEL_WORKSPACE],
    }))
    .filter((v) => Number.isSafeInteger(v.uid))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** Names of the containers (running or not) that mount `volume`: the engine keeps a volume they use. */
async function holdersOf(docker: Docker, volume: string): Promise<string[]> {
  const containers = await docker.listContainers({ all: true, filters: { volume: [volume] } });
  return containers.map((c) => (c.Names[0] ?? c.Id).replace(/^\//, ""));
}

/**
 * Removes `name` unless a container still mounts it (the engine refuses: 409); resolves whether it
 * went. For the shared volume harness once had per user, which no sandbox mounts any more.
 */
export async function removeUnusedVolume(docker: Docker, name: string): Promise<boolean> {
  try {
    await docker.getVolume(name).remove();
    return true;
  } catch {
    return false;
  }
}

/**
 * `harness rm --cache`: removes every package cache volume (only `uid`'s, or one workspace's, when
 * given), and nothing else. A volume a container still mounts (a workspace's long-lived sandbox keeps
 * it) is refused by the engine; the error names those containers, for `harness rm` to remove first.
 */
export async function removePackageCacheVolumes(
  docker: Docker,
  filter: { uid?: number | undefined; workspace?: string | undefined } = {},
): Promise<string[]> {
  // A keeper a killed harness left behind holds volumes; it is the caches' own, so it goes too.
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
  for (const { name } of await listPackageCacheVolumes(docker, filter)) {
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
