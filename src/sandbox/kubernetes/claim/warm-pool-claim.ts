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
import { ownerIdentity } from "../../docker/isolation/copy-container-labels.js";
import { isOrphanedCopy } from "../../docker/isolation/orphaned-copies.js";
import { apiMessage, apiStatus, type Cluster } from "../api/kube-client.js";
import { deletePod } from "../pod/pod-lifecycle.js";
import { LABEL_ISOLATION, LABEL_MANAGED } from "../pod/pod-spec.js";

const log = createDebug("harness:kubernetes");

const GROUP = "extensions.agents.x-k8s.io";
const VERSION = "v1beta1";
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

interface ClaimObject {
  metadata?: { name?: string; annotations?: Record<string, string> };
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

function customObjects(cluster: Cluster): CustomObjectsApi {
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
 * Claims a sandbox from `pool` and waits until the controller has given one whose pod runs (or the
 * deadline). The claim is released again if it fails. `name` is the claim's name.
 */
export async function claimFromWarmPool(
  cluster: Cluster,
  pool: string,
  name: string,
  deadlineMs: number,
): Promise<WarmPoolClaim> {
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
          labels: { [LABEL_MANAGED]: "true", "app.kubernetes.io/managed-by": "harness" },
          annotations: ownerAnnotations(),
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

async function sandboxPod(api: CustomObjectsApi, cluster: Cluster, sandbox: string): Promise<string> {
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

/**
 * Releases harness's claims in the namespace whose harness process is gone (made on this machine by
 * a process that no longer runs: the judgement of Docker's orphaned copies). Best effort: a failure
 * is logged, never fatal. Returns the claims released.
 */
export async function releaseOrphanedClaims(cluster: Cluster): Promise<string[]> {
  const released: string[] = [];
  try {
    const api = customObjects(cluster);
    const list = (await api.listNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: cluster.namespace,
      plural: "sandboxclaims",
      labelSelector: `${LABEL_MANAGED}=true`,
    })) as { items?: ClaimObject[] };
    const here = ownerIdentity();
    for (const item of list.items ?? []) {
      const name = item.metadata?.name ?? "";
      const owner = { ...(item.metadata?.annotations ?? {}), [LABEL_ISOLATION]: "copy" };
      if (name === "" || !isOrphanedCopy(owner, here)) continue;
      const sandbox = item.status?.sandbox?.name || undefined;
      const pod =
        sandbox === undefined ? undefined : await sandboxPod(api, cluster, sandbox).catch(() => sandbox);
      log("releasing claim %s: its harness process is gone", name);
      await releaseClaim(cluster, {
        pool: item.spec?.warmPoolRef?.name ?? "",
        claim: name,
        sandbox,
        pod,
      }).then(
        () => released.push(name),
        (error: unknown) => log("%s", (error as Error).message),
      );
    }
  } catch (error) {
    log("looking for orphaned claims failed: %s", (error as Error).message);
  }
  return released;
}
