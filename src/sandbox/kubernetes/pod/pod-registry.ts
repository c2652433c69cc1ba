/** harness's pods in a namespace, by label: what `harness ps` lists and `harness rm` removes. */
import { type Cluster, type ClusterOptions, connectCluster } from "../api/kube-client.js";
import { deletePod } from "./pod-lifecycle.js";
import { ANNOTATION_WORKSPACE, LABEL_WORKSPACE_HASH, MANAGED_SELECTOR, workspaceHash } from "./pod-spec.js";

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
  return pods.items.map((pod) => ({
    name: pod.metadata?.name ?? "",
    namespace: cluster.namespace,
    status: pod.metadata?.deletionTimestamp ? "Terminating" : (pod.status?.phase ?? "Unknown"),
    image: pod.spec?.containers[0]?.image ?? "",
    workspace: pod.metadata?.annotations?.[ANNOTATION_WORKSPACE] ?? "",
  }));
}

export async function removeHarnessPods(
  cluster: Cluster,
  pods: readonly HarnessPod[],
): Promise<HarnessPod[]> {
  for (const pod of pods) await deletePod(cluster, pod.name);
  return [...pods];
}

export { type Cluster, type ClusterOptions, connectCluster };
