/**
 * `harness doctor`'s line about the package cache: how many caches (one per workspace) each user
 * has and their size together as the engine counts it (`docker system df`: the engine stats the
 * files; harness reads none of them), against the bound, which is over all of one user's caches.
 */
import type Docker from "dockerode";
import { formatBytes } from "../../../text/units.js";
import type { DoctorCheck } from "../../doctor-check.js";
import { listPackageCacheVolumes } from "./package-cache-volume.js";

interface DfVolume {
  Name: string;
  UsageData?: { Size?: number } | null;
}

/** `uid`'s caches (every user's when undefined), in one line, never an exception: the cache is a convenience, never a reason harness cannot run. */
export async function packageCacheCheck(
  docker: Docker,
  maxBytes: number,
  uid?: number,
): Promise<DoctorCheck> {
  const name = "package cache";
  try {
    const volumes = await listPackageCacheVolumes(docker, { uid });
    if (volumes.length === 0)
      return {
        name,
        status: "ok",
        detail: `empty (one per workspace, made by its first sandbox; bound ${formatBytes(maxBytes)} over a user's caches)`,
      };
    const df = (await docker.df()) as { Volumes?: DfVolume[] | null };
    const byUid = new Map<number, { count: number; bytes: number; unknown: number }>();
    for (const volume of volumes) {
      const size = df.Volumes?.find((v) => v.Name === volume.name)?.UsageData?.Size;
      const entry = byUid.get(volume.uid) ?? { count: 0, bytes: 0, unknown: 0 };
      entry.count += 1;
      if (size === undefined || size < 0) entry.unknown += 1;
      else entry.bytes += size;
      byUid.set(volume.uid, entry);
    }
    const parts = [...byUid].map(([owner, { count, bytes, unknown }]) => {
      const size = unknown === count ? "size unknown" : formatBytes(bytes);
      return `uid ${owner}: ${count} cache${count === 1 ? "" : "s"}, ${size}`;
    });
    return {
      name,
      status: "ok",
      detail: `${parts.join("; ")} (one per workspace; bound ${formatBytes(maxBytes)} over a user's caches at a sandbox start; 'harness rm --cache' removes them)`,
    };
  } catch (error) {
    return { name, status: "warn", detail: `not measured: ${(error as Error).message.split("\n")[0]}` };
  }
}
