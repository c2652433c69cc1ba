/**
 * A sandbox pod's life: created, waited for until its sandbox container runs (or a clear reason it
 * never will: an image the node does not have, a setup that failed, no node to run on), looked at
 * when a command lost its exec, and deleted. Polling rather than a watch: a pod starts in about a
 * second, and a read every 150 ms is the same as a watch to the user and simpler to bound.
 */
import type { V1ContainerStatus, V1Pod } from "@kubernetes/client-node";
import createDebug from "debug";
import { EngineGoneError, SandboxError } from "../../../errors.js";
import { apiMessage, apiStatus, type Cluster } from "../api/kube-client.js";
import { podCreateRefusalHint } from "../api/pod-security.js";
import { SANDBOX_CONTAINER } from "./pod-spec.js";

const log = createDebug("harness:kubernetes");

const POLL_MS = 150;
/** Waiting reasons that will not pass by themselves. */
const STUCK = new Set([
  "ErrImageNeverPull",
  "ErrImagePull",
  "ImagePullBackOff",
  "InvalidImageName",
  "CreateContainerConfigError",
  "CreateContainerError",
  "RunContainerError",
  "CrashLoopBackOff",
]);

export async function createPod(cluster: Cluster, pod: V1Pod): Promise<void> {
  try {
    await cluster.core.createNamespacedPod({ namespace: cluster.namespace, body: pod });
  } catch (error) {
    const status = apiStatus(error);
    const hint =
      status === 404
        ? ` (does namespace '${cluster.namespace}' exist? kubectl create namespace ${cluster.namespace})`
        : status === 403
          ? podCreateRefusalHint(apiMessage(error), cluster.namespace)
          : "";
    throw new SandboxError(`creating the sandbox pod failed: ${apiMessage(error)}${hint}`, { cause: error });
  }
}

/** Resolves once the sandbox container runs; rejects with the reason it will not, or at the deadline. */
export async function waitRunning(cluster: Cluster, name: string, deadlineMs: number): Promise<V1Pod> {
  const until = Date.now() + deadlineMs;
  let last = "no status yet";
  for (;;) {
    const pod = await readPod(cluster, name);
    if (pod === undefined) throw new SandboxError(`the sandbox pod ${name} was deleted while it started`);
    const verdict = startVerdict(pod);
    if (verdict.kind === "running") return pod;
    if (verdict.kind === "failed") {
      throw new SandboxError(`the sandbox pod ${name} did not start: ${verdict.why}`, { containerId: name });
    }
    last = verdict.why;
    if (Date.now() > until) {
      throw new SandboxError(`the sandbox pod ${name} was not running after ${deadlineMs} ms: ${last}`, {
        containerId: name,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

export type StartVerdict =
  | { kind: "running" }
  | { kind: "failed"; why: string }
  | { kind: "waiting"; why: string };

/** Where a starting pod is: running, failed for good (with why), or still on its way. */
export function startVerdict(pod: V1Pod): StartVerdict {
  const status = pod.status;
  const setup = status?.initContainerStatuses?.[0];
  const setupEnd = setup?.state?.terminated;
  if (setupEnd && setupEnd.exitCode !== 0) {
    const message = setupEnd.message?.trim() || `exit code ${setupEnd.exitCode}`;
    return { kind: "failed", why: `its setup failed: ${message}` };
  }
  const stuck = [setup, ...(status?.containerStatuses ?? [])].find((c) => stuckReason(c) !== undefined);
  if (stuck) return { kind: "failed", why: stuckReason(stuck) ?? "" };
  const sandbox = status?.containerStatuses?.find((c) => c.name === SANDBOX_CONTAINER);
  if (sandbox?.state?.running) return { kind: "running" };
  if (sandbox?.state?.terminated) {
    return {
      kind: "failed",
      why: `its container ended (${sandbox.state.terminated.reason ?? "no reason given"})`,
    };
  }
  if (status?.phase === "Failed" || status?.phase === "Succeeded") {
    return { kind: "failed", why: `${status.phase}: ${status.reason ?? ""} ${status.message ?? ""}`.trim() };
  }
  const unscheduled = status?.conditions?.find((c) => c.type === "PodScheduled" && c.status === "False");
  if (unscheduled)
    return { kind: "waiting", why: `not scheduled: ${unscheduled.message ?? unscheduled.reason ?? ""}` };
  return { kind: "waiting", why: `phase ${status?.phase ?? "unknown"}` };
}

function stuckReason(c: V1ContainerStatus | undefined): string | undefined {
  const waiting = c?.state?.waiting;
  if (!waiting?.reason || !STUCK.has(waiting.reason)) return undefined;
  const hint =
    waiting.reason === "ErrImageNeverPull" || waiting.reason.includes("Pull")
      ? " (the node must have the image: load it into the node's runtime, or pass an --image it can pull)"
      : "";
  return `${waiting.reason}: ${waiting.message ?? ""}${hint}`.trim();
}

/** The pod, or undefined when it is gone; rejects when the API server cannot say. */
export async function readPod(cluster: Cluster, name: string): Promise<V1Pod | undefined> {
  try {
    return await cluster.core.readNamespacedPod({ name, namespace: cluster.namespace });
  } catch (error) {
    if (apiStatus(error) === 404) return undefined;
    throw new SandboxError(`reading the sandbox pod ${name} failed: ${apiMessage(error)}`, { cause: error });
  }
}

/**
 * Whether the pod is gone or on its way out (deleted, its container ended). Rejects, with an
 * `EngineGoneError`, when the API server cannot say (it went away, or the connection to it did): the
 * pod, and the copy of the workspace it holds, may well still be there, so it is never called deleted.
 */
export async function podLost(cluster: Cluster, name: string): Promise<string | undefined> {
  const pod = await readPod(cluster, name).catch((error: unknown) => {
    const unknown =
      "the command did not complete; the pod, with its copy of the workspace, may still be there";
    // An answer with a status (403, 500): the API server is there but would not say.
    if (apiStatus((error as Error).cause) !== undefined)
      throw new SandboxError(`${(error as Error).message}: ${unknown}`, { cause: error, containerId: name });
    throw new EngineGoneError(
      `the Kubernetes API server did not answer (${(error as Error).message}) when harness looked at the sandbox pod after its command's connection ended: ${unknown}`,
      { cause: error, containerId: name },
    );
  });
  if (pod === undefined) return "the sandbox pod was deleted";
  if (pod.metadata?.deletionTimestamp) return "the sandbox pod is being deleted";
  const sandbox = pod.status?.containerStatuses?.find((c) => c.name === SANDBOX_CONTAINER);
  if (sandbox?.state?.terminated) {
    return `the sandbox pod's container ended (${sandbox.state.terminated.reason ?? "no reason given"})`;
  }
  return undefined;
}

/** Deletes the pod at once (grace 0); a pod already gone is fine. */
export async function deletePod(cluster: Cluster, name: string): Promise<void> {
  try {
    await cluster.core.deleteNamespacedPod({ name, namespace: cluster.namespace, gracePeriodSeconds: 0 });
    log("deleted pod %s", name);
  } catch (error) {
    if (apiStatus(error) === 404) return;
    throw new SandboxError(`deleting the sandbox pod ${name} failed: ${apiMessage(error)}`, { cause: error });
  }
}
