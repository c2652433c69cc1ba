/**
 * The batch's warm pool on Kubernetes: a task's pod is created while earlier tasks run (about 2 s
 * of scheduling, kubelet and containers, docs/scale-out.md), labelled with the batch's pool and
 * annotated with its config hash; the task's open takes it by name when it was made from the same
 * settings, and copies the workspace in then (the copy is the workspace as it is when the task
 * starts). A pod no task took is deleted by the pool's discard, or, if the batch died, as an orphan
 * by the next open.
 */
import { randomUUID } from "node:crypto";
import type { Cluster } from "./api/kube-client.js";
import type { KubernetesSandboxOptions } from "./kubernetes-options.js";
import { createPod, deletePod, readPod, startVerdict } from "./pod/pod-lifecycle.js";
import {
  ANNOTATION_CONFIG_HASH,
  LABEL_WARM_POOL,
  LABEL_WORKSPACE_HASH,
  type PodSettings,
  podConfigHash,
  podManifest,
  podName,
  workspaceHash,
} from "./pod/pod-spec.js";
import { planPod } from "./pod-plan.js";

export interface WarmPod {
  name: string;
  /** Deletes it; resolves in every case (a pod already taken and ended is gone already). */
  discard: () => Promise<void>;
}

/** Creates the pod `options` would open, without waiting for it to run. */
export async function warmPod(options: KubernetesSandboxOptions, poolId: string): Promise<WarmPod> {
  const { cluster, settings, workspace } = await planPod(options);
  const name = podName(workspace);
  await createPod(cluster, podManifest(settings, name, randomUUID(), poolId));
  return { name, discard: () => deletePod(cluster, name).catch(() => {}) };
}

/**
 * Whether the warm pod `name` can be this sandbox's: made for this workspace from the same settings,
 * not on its way out, not failed. One that cannot is deleted.
 */
export async function takeWarmPod(cluster: Cluster, name: string, settings: PodSettings): Promise<boolean> {
  const pod = await readPod(cluster, name).catch(() => undefined);
  if (pod === undefined) return false;
  const meta = pod.metadata ?? {};
  const usable =
    meta.labels?.[LABEL_WARM_POOL] !== undefined &&
    meta.labels?.[LABEL_WORKSPACE_HASH] === workspaceHash(settings.workspace) &&
    meta.annotations?.[ANNOTATION_CONFIG_HASH] === podConfigHash(settings) &&
    !meta.deletionTimestamp &&
    startVerdict(pod).kind !== "failed";
  if (!usable) await deletePod(cluster, name).catch(() => {});
  return usable;
}
