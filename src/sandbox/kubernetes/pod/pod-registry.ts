/** harness's pods in a namespace, by label: what `harness ps` lists and `harness rm` removes. */
import createDebug from "debug";
import { ownerIdentity } from "../../docker/isolation/labels/copy-container-labels.js";
import { isOrphanedCopy } from "../../docker/isolation/orphaned-copies.js";
import { type Cluster, type ClusterOptions, connectCluster } from "../api/kube-client.js";
import { ANNOTATION_IDLE_SINCE, deleteIfUnchanged, keptIdleTooLong, keptState } from "./kept-pod.js";
import { deletePod } from "./pod-lifecycle.js";
import {
  ANNOTATION_WORKSPACE,
  LABEL_ISOLATION,
  LABEL_WORKSPACE_HASH,
  MANAGED_SELECTOR,
  workspaceHash,
} from "./pod-spec.js";

const log = createDebug("harness:kubernetes");

export interface HarnessPod {
  name: string;
  namespace: string;
  /** Pending, Running…, or "Terminating". */
  status: string;
  image: string;
  /** From the annotation: shown, never obeyed (anyone who may create pods can set it). */
  workspace: string;
}

/** harness's pods, of one workspace (a real path) when given. */
export async function listHarnessPods(cluster: Cluster, workspace?: string): Promise<HarnessPod[]> {
  const selector =
    workspace === undefined
      ? MANAGED_SELECTOR
      : `${MANAGED_SELECTOR},${LABEL_WORKSPACE_HASH}=${workspaceHash(workspace)}`;
  const pods = await cluster.core.listNamespacedPod({
    namespace: cluster.namespace,
    labelSelector: selector,
  });
  return pods.items.map((pod) => {
    const phase = pod.metadata?.deletionTimestamp ? "Terminating" : (pod.status?.phase ?? "Unknown");
    const kept = keptState(pod);
    return {
      name: pod.metadata?.name ?? "",
      namespace: cluster.namespace,
      status: kept === undefined ? phase : `${phase}, ${kept}`,
      image: pod.spec?.containers[0]?.image ?? "",
      workspace: pod.metadata?.annotations?.[ANNOTATION_WORKSPACE] ?? "",
    };
  });
}

/**
 * Deletes harness's pods in the namespace whose harness process is gone (made on this machine, by a
 * process that no longer runs: the same judgement as Docker's orphaned copies; a kept pod is judged
 * by its last holder while one holds it), and the kept pods idle past KEPT_IDLE_MS (kept-pod.ts,
 * judged from any machine: the time is in the pod). Best effort: a failure is logged, never fatal.
 * Returns the names deleted.
 */
export async function removeOrphanedPods(cluster: Cluster): Promise<string[]> {
  const removed: string[] = [];
  try {
    const pods = await cluster.core.listNamespacedPod({
      namespace: cluster.namespace,
      labelSelector: MANAGED_SELECTOR,
    });
    const here = ownerIdentity();
    for (const pod of pods.items) {
      const name = pod.metadata?.name ?? "";
      if (pod.metadata?.annotations?.[ANNOTATION_IDLE_SINCE] !== undefined) {
        if (keptIdleTooLong(pod) && (await deleteIfUnchanged(cluster, pod))) removed.push(name);
        continue;
      }
      const owner = { ...(pod.metadata?.annotations ?? {}), [LABEL_ISOLATION]: "copy" };
      if (!isOrphanedCopy(owner, here)) continue;
      log("deleting pod %s: its harness process is gone", name);
      await deletePod(cluster, name).then(
        () => removed.push(name),
        (error: unknown) => log("%s", (error as Error).message),
      );
    }
  } catch (error) {
    log("looking for orphaned pods failed: %s", (error as Error).message);
  }
  return removed;
}

export async function removeHarnessPods(
  cluster: Cluster,
  pods: readonly HarnessPod[],
): Promise<HarnessPod[]> {
  for (const pod of pods) await deletePod(cluster, pod.name);
  return [...pods];
}

export { type Cluster, type ClusterOptions, connectCluster };
