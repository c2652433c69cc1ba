/**
 * The CLI's pod kept per workspace (issue 33): as Docker keeps a workspace's container, a session of
 * `harness exec`, `run`, `shell` or `mcp` on Kubernetes leaves its pod for the next one instead of
 * deleting it, so that a second `exec` costs a few calls, not a pod (about 2 s of scheduling, kubelet
 * and containers).
 *
 * Copy isolation is kept: the pod holds the workspace only while a session holds the pod. Every
 * session's end, and again every session's start, runs pod-reset.sh (every process of the sandbox
 * user ended and checked gone; the workspace, /tmp, the home and the state directory emptied), and
 * the session's copy of the workspace goes in whole, as into a new pod. A pod that cannot be reset
 * is deleted, never kept.
 *
 * One session at a time: copy isolation gives each session its own copy, so two cannot share one
 * pod's. Who holds the pod is in its annotations: the holder's identity (the owner annotations, so
 * that a holder that died is judged as an orphan and its pod deleted by the next open), and
 * `idle-since` while nobody does. Taking it is a replace carrying the resourceVersion read, so of two
 * sessions racing for it the API server lets one win; the other gets a pod of its own for the
 * session, deleted at its end, as before this file.
 *
 * Found by its labels (managed, kept, the workspace's hash) and its annotations (the workspace's
 * path, the host, the config hash, harness's version): a pod made from other settings or by another
 * version is deleted when idle, and one whose spec is not, field by field, the pod harness would make
 * now (pod-hardening.ts, as a warm pool's pod is checked: a pod's image can be changed in
 * place) is deleted rather than used. A pod idle longer than KEPT_IDLE_MS is deleted by the next open
 * or `harness ps` on the namespace (pod-registry.ts); `harness rm --engine kubernetes` removes it at once.
 */
import type { V1Pod } from "@kubernetes/client-node";
import createDebug from "debug";
import { HARNESS_VERSION } from "../../../version.js";
import { HOME_DIR } from "../../docker/container/container-spec.js";
import { LABEL_OWNER_HOST, LABEL_OWNER_PID } from "../../docker/container/labels.js";
import { ownerIdentity } from "../../docker/isolation/labels/copy-container-labels.js";
import { STATE_DIR } from "../../exec/exec-scripts.js";
import { programText } from "../../exec/program-text.js";
import { apiMessage, apiStatus, type Cluster } from "../api/kube-client.js";
import { asUser, runInPod } from "../api/pod-command.js";
import type { PodTarget } from "../api/pod-exec.js";
import { hardeningDifference } from "./pod-hardening.js";
import { startVerdict } from "./pod-lifecycle.js";
import {
  ANNOTATION_CONFIG_HASH,
  ANNOTATION_WORKSPACE,
  LABEL_MANAGED,
  LABEL_VERSION,
  LABEL_WORKSPACE_HASH,
  labelValue,
  ownerAnnotations,
  type PodSettings,
  podConfigHash,
  podManifest,
  workspaceHash,
} from "./pod-spec.js";

const log = createDebug("harness:kubernetes");

/** Marks the CLI's pod kept for its workspace between sessions. */
export const LABEL_KEPT = "dev.harness.kept";
/** When the last session let the pod go (ISO 8601); absent while a session holds it. */
export const ANNOTATION_IDLE_SINCE = "dev.harness.idle-since";
/**
 * How long a kept pod may sit unused before the next open or `harness ps` on the namespace deletes
 * it: long enough to cover a working session's pauses, short enough that a forgotten pod's memory
 * (its tmpfs-backed emptyDirs, its requests) goes back to the cluster the same hour.
 */
export const KEPT_IDLE_MS = 30 * 60_000;

/** A kept pod's state as `harness ps` shows it. */
export function keptState(pod: V1Pod, now = Date.now()): string | undefined {
  const meta = pod.metadata ?? {};
  if (meta.labels?.[LABEL_KEPT] !== "true") return undefined;
  const idle = meta.annotations?.[ANNOTATION_IDLE_SINCE];
  if (idle === undefined) {
    const holder = meta.annotations ?? {};
    return `kept, in use by pid ${holder[LABEL_OWNER_PID] ?? "?"} on ${holder[LABEL_OWNER_HOST] ?? "?"}`;
  }
  const minutes = Math.max(0, Math.round((now - Date.parse(idle)) / 60_000));
  return `kept, idle ${minutes} min (deleted after ${KEPT_IDLE_MS / 60_000})`;
}

/** Whether a kept pod has sat unused past KEPT_IDLE_MS. */
export function keptIdleTooLong(pod: V1Pod, now = Date.now()): boolean {
  const idle = pod.metadata?.annotations?.[ANNOTATION_IDLE_SINCE];
  if (idle === undefined) return false;
  const since = Date.parse(idle);
  return !Number.isFinite(since) || now - since > KEPT_IDLE_MS;
}

export type KeptPodLookup =
  | { kind: "reuse"; pod: string }
  | { kind: "create" }
  /** Another live session holds the workspace's pod: this session gets a pod of its own. */
  | { kind: "busy"; holder: string };

/**
 * Takes the workspace's kept pod for this session when there is one it may use, deleting on the way
 * the idle ones it must not (other settings, another version, not hardened as harness's, not running).
 */
export async function takeKeptPod(
  cluster: Cluster,
  settings: PodSettings,
  say: (line: string) => void,
): Promise<KeptPodLookup> {
  const selector = `${LABEL_MANAGED}=true,${LABEL_KEPT}=true,${LABEL_WORKSPACE_HASH}=${workspaceHash(settings.workspace)}`;
  const pods = await cluster.core.listNamespacedPod({
    namespace: cluster.namespace,
    labelSelector: selector,
  });
  const here = ownerIdentity();
  const wantedHash = podConfigHash(settings);
  let busy: string | undefined;
  for (const pod of pods.items) {
    const meta = pod.metadata ?? {};
    const name = meta.name ?? "";
    const notes = meta.annotations ?? {};
    // Another machine's (or another path with the same hash): not ours to use or delete.
    if (notes[ANNOTATION_WORKSPACE] !== settings.workspace || notes[LABEL_OWNER_HOST] !== here.host) continue;
    if (meta.deletionTimestamp) continue;
    const idle = notes[ANNOTATION_IDLE_SINCE] !== undefined;
    const same =
      notes[ANNOTATION_CONFIG_HASH] === wantedHash &&
      meta.labels?.[LABEL_VERSION] === labelValue(HARNESS_VERSION);
    if (!idle) {
      if (same) busy ??= `pid ${notes[LABEL_OWNER_PID] ?? "?"}`;
      continue;
    }
    if (!same) {
      log("kept pod %s was made from other settings or another harness version: deleting it", name);
      await deleteIfUnchanged(cluster, pod);
      continue;
    }
    const refusal = unusable(pod, settings);
    if (refusal !== undefined) {
      say(`the workspace's kept pod ${name} was not used and is deleted: ${refusal}`);
      await deleteIfUnchanged(cluster, pod);
      continue;
    }
    if (await hold(cluster, pod)) return { kind: "reuse", pod: name };
  }
  return busy === undefined ? { kind: "create" } : { kind: "busy", holder: busy };
}

/** Why an idle kept pod of the right settings may not be used, or undefined. */
function unusable(pod: V1Pod, settings: PodSettings): string | undefined {
  const verdict = startVerdict(pod);
  if (verdict.kind !== "running") return `it is not running (${verdict.why})`;
  const difference = hardeningDifference(podManifest(settings, pod.metadata?.name ?? "", ""), pod);
  return difference === undefined
    ? undefined
    : `it is not the hardened pod harness makes for these settings: ${difference}`;
}

/**
 * Makes this process the pod's holder, only if nobody changed the pod since it was read (the
 * resourceVersion): false when another session took it first.
 */
async function hold(cluster: Cluster, pod: V1Pod): Promise<boolean> {
  const name = pod.metadata?.name ?? "";
  const annotations = { ...(pod.metadata?.annotations ?? {}), ...ownerAnnotations() };
  delete annotations[ANNOTATION_IDLE_SINCE];
  try {
    await cluster.core.replaceNamespacedPod({
      name,
      namespace: cluster.namespace,
      body: { ...pod, apiVersion: "v1", kind: "Pod", metadata: { ...pod.metadata, annotations } },
    });
    return true;
  } catch (error) {
    if (apiStatus(error) === 409 || apiStatus(error) === 404) {
      log("kept pod %s was taken or deleted meanwhile", name);
      return false;
    }
    throw error;
  }
}

/** Lets the pod go for the next session: idle from now. Rejects when the pod cannot be marked. */
export async function letGo(cluster: Cluster, name: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const pod = await cluster.core.readNamespacedPod({ name, namespace: cluster.namespace });
    const annotations = {
      ...(pod.metadata?.annotations ?? {}),
      [ANNOTATION_IDLE_SINCE]: new Date().toISOString(),
    };
    try {
      await cluster.core.replaceNamespacedPod({
        name,
        namespace: cluster.namespace,
        body: { ...pod, apiVersion: "v1", kind: "Pod", metadata: { ...pod.metadata, annotations } },
      });
      return;
    } catch (error) {
      // kubelet writes the pod's status meanwhile: read it again.
      if (apiStatus(error) !== 409 || attempt >= 4) throw error;
    }
  }
}

/**
 * Deletes a pod only if it is still as read: an idle pod another session took meanwhile (its
 * resourceVersion changed) is left to it. Best effort.
 */
export async function deleteIfUnchanged(cluster: Cluster, pod: V1Pod): Promise<boolean> {
  const name = pod.metadata?.name ?? "";
  try {
    await cluster.core.deleteNamespacedPod({
      name,
      namespace: cluster.namespace,
      gracePeriodSeconds: 0,
      body: { preconditions: { resourceVersion: pod.metadata?.resourceVersion ?? "" } },
    });
    log("deleted pod %s", name);
    return true;
  } catch (error) {
    log("pod %s not deleted: %s", name, apiMessage(error));
    return false;
  }
}

/** Runs pod-reset.sh as the sandbox user; rejects with its reason when the pod cannot be made clean. */
export async function resetPod(target: PodTarget, settings: PodSettings): Promise<void> {
  const script = programText(new URL("./pod-reset.sh", import.meta.url));
  const argv = ["/bin/sh", "-c", script, "harness-pod-reset", settings.workdir, "/tmp", HOME_DIR, STATE_DIR];
  const result = await runInPod(target, asUser(settings.user, argv), { deadlineMs: 60_000 });
  if (result.exitCode !== 0) {
    const why =
      result.error ?? (result.stderr.trim().split("\n").slice(-2).join("; ") || `exit ${result.exitCode}`);
    throw new Error(`resetting the pod failed: ${why}`);
  }
}

/** The pod to keep for the workspace: harness's manifest, labelled kept. */
export function keptManifest(settings: PodSettings, name: string, session: string): V1Pod {
  const pod = podManifest(settings, name, session);
  pod.metadata = { ...pod.metadata, labels: { ...pod.metadata?.labels, [LABEL_KEPT]: "true" } };
  return pod;
}
