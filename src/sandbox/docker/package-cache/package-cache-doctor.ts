/**
 * `harness doctor`'s line about the package cache: each cache volume's size as the engine counts it
 * (`docker system df`: the engine stats the files; harness reads none of them).
 */
import type Docker from "dockerode";
import { formatBytes } from "../../../text/units.js";
import type { DoctorCheck } from "../../doctor-check.js";
import { listPackageCacheVolumes } from "./package-cache-volume.js";

interface DfVolume {
  Name: string;
  UsageData?: { Size?: number } | null;
}

/** `uid`'s cache (every user's when undefined), in one line, never an exception: the cache is a convenience, never a reason harness cannot run. */
export async function packageCacheCheck(
  docker: Docker,
  maxBytes: number,
  uid?: number,
): Promise<DoctorCheck> {
  const name = "package cache";
  try {
    const volumes = await listPackageCacheVolumes(docker, uid);
    if (volumes.length === 0)
      return {
        name,
        status: "ok",
        detail: `empty (made by the first sandbox; bound ${formatBytes(maxBytes)})`,
      };
    const df = (await docker.df()) as { Volumes?: DfVolume[] | null };
    const sizes = volumes.map((volume) => {
      const size = df.Volumes?.find((v) => v.Name === volume)?.UsageData?.Size;
      return `${volume} ${size === undefined || size < 0 ? "size unknown" : formatBytes(size)}`;
    });
    return {
      name,
      status: "ok",
      detail: `${sizes.join(", ")} (bound ${formatBytes(maxBytes)} at each sandbox start; 'harness rm --cache' removes it)`,
    };
  } catch (error) {
    return { name, status: "warn", detail: `not measured: ${(error as Error).message.split("\n")[0]}` };
  }
}
