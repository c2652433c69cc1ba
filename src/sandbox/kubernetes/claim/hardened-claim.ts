/**
 * A pod claimed from a warm pool, accepted only when it is hardened as the pod harness would have
 * made for the same settings (pod-hardening.ts); otherwise the claim is released and the run ends
 * with one line naming the first field that differs.
 */
import { randomBytes } from "node:crypto";
import { ConfigError } from "../../../errors.js";
import type { Cluster } from "../api/kube-client.js";
import { hardeningDifference } from "../pod/pod-hardening.js";
import { readPod } from "../pod/pod-lifecycle.js";
import { type PodSettings, podManifest } from "../pod/pod-spec.js";
import { releaseOrphanedClaims } from "./claim-registry.js";
import { claimFromWarmPool, releaseClaim, type WarmPoolClaim } from "./warm-pool-claim.js";

export async function claimHardenedPod(
  cluster: Cluster,
  settings: PodSettings,
  pool: string,
  deadlineMs: number,
): Promise<WarmPoolClaim & { pod: string }> {
  const name = `harness-claim-${randomBytes(5).toString("hex")}`;
  // Claims a harness process on this machine left when it died go first, as its pods do.
  await releaseOrphanedClaims(cluster);
  const claim = await claimFromWarmPool(cluster, { pool, name, workspace: settings.workspace }, deadlineMs);
  const podName = claim.pod ?? claim.sandbox ?? name;
  try {
    const pod = await readPod(cluster, podName);
    const difference =
      pod === undefined
        ? "it does not exist"
        : hardeningDifference(podManifest(settings, podName, name), pod);
    if (difference !== undefined) {
      throw new ConfigError(
        `--kube-warm-pool ${pool}: refused the pool's pod ${podName}, it is not the hardened pod harness makes for these settings: ${difference}; the claim was released (make the pool's SandboxTemplate from harness's pod spec, docs/scale-out.md)`,
      );
    }
  } catch (error) {
    await releaseClaim(cluster, claim).catch(() => {});
    throw error;
  }
  return { ...claim, pod: podName };
}
