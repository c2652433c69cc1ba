/**
 * `--kube-warm-pool NAME`: the sandbox's pod is taken from a SandboxWarmPool of
 * kubernetes-sigs/agent-sandbox (its extensions API, extensions.agents.x-k8s.io/v1beta1) instead of
 * being created: a SandboxClaim names the pool, the controller hands it one of the pool's running
 * Sandboxes (and makes the pool a new one), and the claim's status names it. The pod is the
 * Sandbox's (named as it, or in its agents.x-k8s.io/pod-name annotation).
 *
 * Released by deleting the claim, then the Sandbox, then the pod: a cluster's garbage collector
 * would delete the last two with the claim (they are owned by it), but not every cluster runs one
 * (harness's test cluster does not), and a pod deleted before its Sandbox would be made again. A
 * claim carries the harness process that made it (annotations, as harness's pods do), so that the
 * next claim releases the ones a dead process left (a second Ctrl-C, kill -9).
 */
import { CustomObjectsApi } from "@kubernetes/client-node";
import createDebug from "debug";
import { ConfigError, SandboxError } from "../../../errors.js";
import {
  LABEL_OWNER_BOOT_ID,
  LABEL_OWNER_HOST,
  LABEL_OWNER_PID,
  LABEL_OWNER_PID_NS,
} from "../../docker/container/labels.js";
import { ownerIdentity } from "../../docker/isolation/labels/copy-container-labels.js";
import { apiMessage, apiStatus, type Cluster } from "../api/kube-client.js";
import { deletePod } from "../pod/pod-lifecycle.js";
import { ANNOTATION_WORKSPACE, LABEL_MANAGED, LABEL_WORKSPACE_HASH, workspaceHash } from "../pod/pod-spec.js";

const log = createDebug("harness:kubernetes");

export const GROUP = "extensions.agents.x-k8s.io";
export const VERSION = "v1beta1";
const SANDBOX_GROUP = "agents.x-k8s.io";
const POD_NAME_ANNOTATION = "agents.x-k8s.io/pod-name";
const POLL_MS = 100;

export interface WarmPoolClaim {
  pool: string;
  /** The SandboxClaim's name (harness's). */
  claim: string;
  /** The Sandbox the controller gave it; undefined until it did. */
  sandbox?: string | undefined;
  /** The Sandbox's pod. */
  pod?: string | undefined;
}

export interface ClaimObject {
  metadata?: { name?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: { warmPoolRef?: { name?: string } };
  status?: {
    sandbox?: { name?: string };
    conditions?: { type?: string; status?: string; reason?: string; message?: string }[];
  };
}

/** The harness process that makes the claim, as its pods carry it. */
function ownerAnnotations(): Record<string, string> {
  const owner = ownerIdentity();
  return {
    [LABEL_OWNER_HOST]: owner.host,
    [LABEL_OWNER_BOOT_ID]: owner.bootId,
    [LABEL_OWNER_PID_NS]: owner.pidNs,
    [LABEL_OWNER_PID]: String(owner.pid),
  };
}

export function customObjects(cluster: Cluster): CustomObjectsApi {
  return cluster.kc.makeApiClient(CustomObjectsApi);
}

/** Fails with a clear line when the pool does not exist (or the API does not: no agent-sandbox). */
async function checkPool(api: CustomObjectsApi, cluster: Cluster, pool: string): Promise<void> {
  try {
    await api.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: cluster.namespace,
      plural: "sandboxwarmpools",
      name: pool,
    });
  } catch (error) {
    if (apiStatus(error) === 404) {
      throw new ConfigError(
        `--kube-warm-pool ${pool}: no SandboxWarmPool of that name in namespace ${cluster.namespace} (or no agent-sandbox controller with its extensions on the cluster): ${apiMessage(error)}`,
      );
    }
    throw new SandboxError(`reading the SandboxWarmPool ${pool} failed: ${apiMessage(error)}`, {
      cause: error,
    });
  }
}

/**
 * Claims a sandbox from `pool` for `workspace` and waits until the controller has given one whose
 * pod runs (or the deadline). The claim is released again if it fails. `name` is the claim's name.
 * The claim carries the workspace as harness's pods do (a label of its hash for `harness rm
 * --workspace`, the path for `harness ps`): the pool's pods are the template's, without them.
 */
export async function claimFromWarmPool(
  cluster: Cluster,
  claimed: { pool: string; name: string; workspace: string },
  deadlineMs: number,
): Promise<WarmPoolClaim> {
  const { pool, name, workspace } = claimed;
  const api = customObjects(cluster);
  await checkPool(api, cluster, pool);
  const claim: WarmPoolClaim = { pool, claim: name };
  try {
    await api.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: cluster.namespace,
      plural: "sandboxclaims",
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: "SandboxClaim",
        metadata: {
          name,
          namespace: cluster.namespace,
          labels: {
            [LABEL_MANAGED]: "true",
            [LABEL_WORKSPACE_HASH]: workspaceHash(workspace),
            "app.kubernetes.io/managed-by": "harness",
          },
          annotations: { ...ownerAnnotations(), [ANNOTATION_WORKSPACE]: workspace },
        },
        spec: { warmPoolRef: { name: pool } },
      },
    });
  } catch (error) {
    throw new SandboxError(`claiming a sandbox from the warm pool ${pool} failed: ${apiMessage(error)}`, {
      cause: error,
    });
  }
  try {
    const until = Date.now() + deadlineMs;
    let last = "no status yet";
    for (;;) {
      const object = (await api.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace: cluster.namespace,
        plural: "sandboxclaims",
        name,
      })) as ClaimObject;
      claim.sandbox = object.status?.sandbox?.name || claim.sandbox;
      const ready = object.status?.conditions?.find((c) => c.type === "Ready");
      if (claim.sandbox !== undefined && ready?.status === "True") break;
      last = ready?.message || ready?.reason || last;
      if (Date.now() > until) {
        throw new SandboxError(
          `the claim ${name} on the warm pool ${pool} had no ready sandbox after ${deadlineMs} ms: ${last}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    claim.pod = await sandboxPod(api, cluster, claim.sandbox);
    log("claim %s got sandbox %s, pod %s", name, claim.sandbox, claim.pod);
    return claim;
  } catch (error) {
    await releaseClaim(cluster, claim).catch(() => {});
    throw error;
  }
}

export async function sandboxPod(api: CustomObjectsApi, cluster: Cluster, sandbox: string): Promise<string> {
  const object = (await api.getNamespacedCustomObject({
    group: SANDBOX_GROUP,
    version: VERSION,
    namespace: cluster.namespace,
    plural: "sandboxes",
    name: sandbox,
  })) as { metadata?: { annotations?: Record<string, string> } };
  return object.metadata?.annotations?.[POD_NAME_ANNOTATION] || sandbox;
}

async function deleteObject(cluster: Cluster, group: string, plural: string, name: string): Promise<void> {
  try {
    await customObjects(cluster).deleteNamespacedCustomObject({
      group,
      version: VERSION,
      namespace: cluster.namespace,
      plural,
      name,
      propagationPolicy: "Background",
    });
  } catch (error) {
    if (apiStatus(error) === 404) return;
    throw new SandboxError(`deleting the ${plural} ${name} failed: ${apiMessage(error)}`, { cause: error });
  }
}

/** Deletes the claim, its Sandbox and its pod, in that order; each one already gone is fine. */
export async function releaseClaim(cluster: Cluster, claim: WarmPoolClaim): Promise<void> {
  await deleteObject(cluster, GROUP, "sandboxclaims", claim.claim);
  if (claim.sandbox !== undefined) await deleteObject(cluster, SANDBOX_GROUP, "sandboxes", claim.sandbox);
  if (claim.pod !== undefined) await deletePod(cluster, claim.pod);
  log("released claim %s", claim.claim);
}
