/**
 * `harness doctor --engine kubernetes`'s Pod Security check: what the namespace's labels say
 * (api/pod-security.ts), and what the API server answers to a dry run of the very pod harness would
 * create with these settings (`dryRun=All`: admission runs, nothing is stored). The dry run is the
 * answer when it can be had: it also covers a cluster-wide default level and any other admission
 * controller; the labels say why, and are the answer when the dry run cannot be made.
 */
import type { V1Pod } from "@kubernetes/client-node";
import type { DoctorCheck } from "../doctor-check.js";
import { apiMessage, apiStatus, type Cluster } from "./api/kube-client.js";
import {
  isPodSecurityRefusal,
  levelRefusesHarness,
  type PodSecurityLabels,
  podSecurityFix,
  readPodSecurityLabels,
} from "./api/pod-security.js";

/** How a dry run of the pod went: admitted, refused (with the API server's words), or not made. */
type DryRun = { kind: "admitted" } | { kind: "refused"; message: string } | { kind: "untried"; why: string };

export async function podSecurityCheck(cluster: Cluster, pod: () => Promise<V1Pod>): Promise<DoctorCheck> {
  const name = `pod security ${cluster.namespace}`;
  const [labels, dry] = await Promise.all([readPodSecurityLabels(cluster), dryRun(cluster, pod)]);
  const said = "unreadable" in labels ? `labels not readable (${labels.unreadable})` : describeLabels(labels);
  if (dry.kind === "refused") {
    const security = isPodSecurityRefusal(dry.message);
    return {
      name,
      status: "fail",
      detail: `${said}; a dry run of harness's pod was refused: ${dry.message}`,
      fix: security
        ? podSecurityFix(cluster.namespace)
        : "the refusal names the admission controller or policy that would refuse every harness pod: ask the cluster's admin, or use another --namespace",
    };
  }
  if (dry.kind === "admitted")
    return { name, status: "ok", detail: `${said}; a dry run of harness's pod was admitted` };
  // No dry run: the labels are all there is to go by.
  if ("unreadable" in labels) {
    return { name, status: "warn", detail: `${said}, and ${dry.why}: whether pods are admitted is unknown` };
  }
  const refuses = levelRefusesHarness(labels.enforce);
  if (refuses === true) {
    return {
      name,
      status: "fail",
      detail: `${said}: every harness pod will be refused (${dry.why})`,
      fix: podSecurityFix(cluster.namespace),
    };
  }
  return {
    name,
    status: refuses === false || labels.enforce === undefined ? "ok" : "warn",
    detail: `${said} (${dry.why})`,
  };
}

/** "enforce=restricted (latest), warn=restricted", or what an unlabelled namespace gets. */
function describeLabels(labels: PodSecurityLabels): string {
  const enforce =
    labels.enforce === undefined
      ? "no enforce label (the cluster's default level applies: privileged unless its admission configuration sets another)"
      : `enforce=${labels.enforce}${labels.enforceVersion ? ` (${labels.enforceVersion})` : ""}`;
  const notes = [
    ...(labels.warn === undefined ? [] : [`warn=${labels.warn}`]),
    ...(labels.audit === undefined ? [] : [`audit=${labels.audit}`]),
  ];
  return [enforce, ...notes].join(", ");
}

async function dryRun(cluster: Cluster, pod: () => Promise<V1Pod>): Promise<DryRun> {
  let body: V1Pod;
  try {
    body = await pod();
  } catch (error) {
    return { kind: "untried", why: `no dry run: ${(error as Error).message}` };
  }
  try {
    await cluster.core.createNamespacedPod({ namespace: cluster.namespace, body, dryRun: "All" });
    return { kind: "admitted" };
  } catch (error) {
    const message = apiMessage(error);
    // RBAC's own refusal says nothing about admission: the rbac check reports it.
    if (
      apiStatus(error) === 403 &&
      !isPodSecurityRefusal(message) &&
      /cannot create resource/.test(message)
    ) {
      return { kind: "untried", why: "no dry run: the kubeconfig's user may not create pods" };
    }
    if (apiStatus(error) === 404) return { kind: "untried", why: "no dry run: the namespace does not exist" };
    return { kind: "refused", message };
  }
}
