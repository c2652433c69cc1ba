/**
 * harness's claims on warm pools in a namespace, by label: what `harness ps` lists beside the pods
 * and `harness rm` releases (claim, Sandbox, pod), and the ones a dead harness process left, which
 * the next claim releases. A claimed pod is the pool's template and carries none of harness's
 * labels, so it is found through its claim, never by a pod label.
 */
import createDebug from "debug";
import { ownerIdentity } from "../../docker/isolation/labels/copy-container-labels.js";
import { isOrphanedCopy } from "../../docker/isolation/orphaned-copies.js";
import { apiStatus, type Cluster } from "../api/kube-client.js";
import { readPod } from "../pod/pod-lifecycle.js";
import {
  ANNOTATION_WORKSPACE,
  LABEL_ISOLATION,
  LABEL_WORKSPACE_HASH,
  MANAGED_SELECTOR,
  workspaceHash,
} from "../pod/pod-spec.js";
import {
  type ClaimObject,
  customObjects,
  GROUP,
  releaseClaim,
  sandboxPod,
  VERSION,
  type WarmPoolClaim,
} from "./warm-pool-claim.js";

const log = createDebug("harness:kubernetes");

export interface HarnessClaim extends WarmPoolClaim {
  /** The claim's workspace annotation: shown, never obeyed (anyone who may create claims can set it). */
  workspace: string;
  /** The claimed pod's phase ("Running"…), "Terminating", or "waiting" while the pool has given none. */
  status: string;
  image: string;
  /** Who made it (the owner annotations), for the orphan check. */
  annotations: Record<string, string>;
}

/**
 * harness's claims, of one workspace (a real path) when given. None when the cluster has no
 * agent-sandbox extensions (the list is a 404 there): nothing can have been claimed.
 */
export async function listHarnessClaims(cluster: Cluster, workspace?: string): Promise<HarnessClaim[]> {
  const api = customObjects(cluster);
  const labelSelector =
    workspace === undefined
      ? MANAGED_SELECTOR
      : `${MANAGED_SELECTOR},${LABEL_WORKSPACE_HASH}=${workspaceHash(workspace)}`;
  let items: ClaimObject[];
  try {
    const list = (await api.listNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: cluster.namespace,
      plural: "sandboxclaims",
      labelSelector,
    })) as { items?: ClaimObject[] };
    items = list.items ?? [];
  } catch (error) {
    if (apiStatus(error) === 404) return [];
    throw error;
  }
  const claims: HarnessClaim[] = [];
  for (const item of items) {
    const name = item.metadata?.name ?? "";
    if (name === "") continue;
    const sandbox = item.status?.sandbox?.name || undefined;
    const podName =
      sandbox === undefined ? undefined : await sandboxPod(api, cluster, sandbox).catch(() => sandbox);
    const pod = podName === undefined ? undefined : await readPod(cluster, podName).catch(() => undefined);
    claims.push({
      pool: item.spec?.warmPoolRef?.name ?? "",
      claim: name,
      sandbox,
      pod: podName,
      workspace: item.metadata?.annotations?.[ANNOTATION_WORKSPACE] ?? "",
      status:
        pod === undefined
          ? "waiting"
          : pod.metadata?.deletionTimestamp
            ? "Terminating"
            : (pod.status?.phase ?? "Unknown"),
      image: pod?.spec?.containers[0]?.image ?? "",
      annotations: item.metadata?.annotations ?? {},
    });
  }
  return claims;
}

/** Releases each claim (claim, Sandbox, pod); returns them. */
export async function releaseHarnessClaims(
  cluster: Cluster,
  claims: readonly HarnessClaim[],
): Promise<HarnessClaim[]> {
  for (const claim of claims) await releaseClaim(cluster, claim);
  return [...claims];
}

/**
 * Releases harness's claims in the namespace whose harness process is gone (made on this machine by
 * a process that no longer runs: the judgement of Docker's orphaned copies). Best effort: a failure
 * is logged, never fatal. Returns the claims released.
 */
export async function releaseOrphanedClaims(cluster: Cluster): Promise<string[]> {
  const released: string[] = [];
  try {
    const here = ownerIdentity();
    for (const claim of await listHarnessClaims(cluster)) {
      if (!isOrphanedCopy({ ...claim.annotations, [LABEL_ISOLATION]: "copy" }, here)) continue;
      log("releasing claim %s: its harness process is gone", claim.claim);
      await releaseClaim(cluster, claim).then(
        () => released.push(claim.claim),
        (error: unknown) => log("%s", (error as Error).message),
      );
    }
  } catch (error) {
    log("looking for orphaned claims failed: %s", (error as Error).message);
  }
  return released;
}
