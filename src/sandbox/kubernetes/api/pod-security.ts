/**
 * Pod Security admission and harness's pod. The pod's sandbox container runs its PID 1 and the
 * executor as uid 0 holding only CAP_SETUID and CAP_SETGID (its setup container CAP_CHOWN), so that
 * each command runs as the workspace owner (pod-spec.ts): a design choice, the same as on Docker.
 * The "restricted" level forbids both (runAsNonRoot, no capability but NET_BIND_SERVICE), so a
 * namespace that enforces it refuses every harness pod; "baseline" and "privileged" admit it.
 * https://kubernetes.io/docs/concepts/security/pod-security-standards/
 */
import { apiMessage, type Cluster } from "./kube-client.js";

const LABEL = "pod-security.kubernetes.io";

/** The levels harness's pod is admitted at. */
const ADMITTED = new Set(["privileged", "baseline"]);

/** A namespace's Pod Security labels: mode → level (and the version it pins, if any). */
export interface PodSecurityLabels {
  enforce?: string | undefined;
  enforceVersion?: string | undefined;
  warn?: string | undefined;
  audit?: string | undefined;
}

/** The namespace's labels, or why they could not be read (a user allowed pods may not read namespaces). */
export async function readPodSecurityLabels(
  cluster: Cluster,
): Promise<PodSecurityLabels | { unreadable: string }> {
  try {
    const ns = await cluster.core.readNamespace({ name: cluster.namespace });
    const labels = ns.metadata?.labels ?? {};
    return {
      enforce: labels[`${LABEL}/enforce`],
      enforceVersion: labels[`${LABEL}/enforce-version`],
      warn: labels[`${LABEL}/warn`],
      audit: labels[`${LABEL}/audit`],
    };
  } catch (error) {
    return { unreadable: apiMessage(error) };
  }
}

/** True when the level (an enforce label's value) refuses harness's pod; undefined when unknown. */
export function levelRefusesHarness(level: string | undefined): boolean | undefined {
  if (level === undefined) return undefined;
  if (level === "restricted") return true;
  return ADMITTED.has(level) ? false : undefined;
}

/** True when an API server's refusal came from Pod Security admission. */
export function isPodSecurityRefusal(message: string): boolean {
  return message.includes("violates PodSecurity");
}

/** Why harness's pod needs more than "restricted", and the two ways out: one clause for a message. */
export function podSecurityFix(namespace: string): string {
  return `harness's pod runs its PID 1 as uid 0 with CAP_SETUID and CAP_SETGID to run each command as the workspace owner, which Pod Security "restricted" forbids: use a namespace at "baseline" (kubectl label namespace ${namespace} pod-security.kubernetes.io/enforce=baseline --overwrite) or another --namespace`;
}

/** The hint after an API server's refusal to create the pod: Pod Security's, or RBAC's. */
export function podCreateRefusalHint(message: string, namespace: string): string {
  if (isPodSecurityRefusal(message)) return ` (${podSecurityFix(namespace)})`;
  return " (the kubeconfig's user may not create pods there: harness doctor --engine kubernetes)";
}
