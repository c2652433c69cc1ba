/**
 * Whether a pod someone else made (a SandboxWarmPool's, from a SandboxTemplate) is the pod harness
 * would have made: every field that decides what a command can reach, compared with harness's own
 * manifest (pod-spec.ts) for the same settings. Whoever wrote the template may have weakened it (a
 * privileged container, a hostPath, the host's namespaces, a token), or made it for another user or
 * image; such a pod gets no workspace and no command.
 *
 * Compared: the host namespaces and user namespace, the service-account token, the runtime class,
 * the pod's and every container's security context, every volume, the containers themselves (names,
 * images, commands, arguments, working directory, environment, mounts, devices, ports, hooks, probes,
 * limits) and that there are no others (no sidecar, no ephemeral container, no device claim). Not
 * compared: what the cluster fills in or the agent-sandbox controller sets and no command can use to
 * reach further (labels, annotations, node, scheduler, tolerations, DNS, termination messages,
 * requests).
 */
import type { V1Container, V1Pod, V1Volume } from "@kubernetes/client-node";

/** The pod's fields that harden it, in a form two pods can be compared in. */
function hardeningView(pod: V1Pod): Record<string, unknown> {
  const spec = pod.spec;
  return {
    hostNetwork: spec?.hostNetwork ?? false,
    hostPID: spec?.hostPID ?? false,
    hostIPC: spec?.hostIPC ?? false,
    hostUsers: spec?.hostUsers ?? true,
    shareProcessNamespace: spec?.shareProcessNamespace ?? false,
    // The API's default is to mount the token.
    automountServiceAccountToken: spec?.automountServiceAccountToken ?? true,
    enableServiceLinks: spec?.enableServiceLinks ?? true,
    runtimeClassName: spec?.runtimeClassName ?? null,
    securityContext: spec?.securityContext ?? {},
    volumes: byName((spec?.volumes ?? []).map(volumeView)),
    initContainers: byName((spec?.initContainers ?? []).map(containerView)),
    containers: byName((spec?.containers ?? []).map(containerView)),
    ephemeralContainers: (spec?.ephemeralContainers ?? []).map((c) => c.name),
    resourceClaims: (spec?.resourceClaims ?? []).map((c) => c.name),
  };
}

function containerView(c: V1Container): Record<string, unknown> & { name: string } {
  return {
    name: c.name,
    image: c.image ?? null,
    command: c.command ?? [],
    args: c.args ?? [],
    workingDir: c.workingDir ?? null,
    env: c.env ?? [],
    envFrom: c.envFrom ?? [],
    securityContext: c.securityContext ?? {},
    volumeMounts: (c.volumeMounts ?? []).map((m) => ({
      name: m.name,
      mountPath: m.mountPath,
      subPath: m.subPath ?? "",
      readOnly: m.readOnly ?? false,
      mountPropagation: m.mountPropagation ?? "None",
    })),
    volumeDevices: c.volumeDevices ?? [],
    ports: c.ports ?? [],
    lifecycle: c.lifecycle ?? null,
    livenessProbe: c.livenessProbe ?? null,
    readinessProbe: c.readinessProbe ?? null,
    startupProbe: c.startupProbe ?? null,
    // An init container with restartPolicy Always is a sidecar that runs beside the commands.
    restartPolicy: c.restartPolicy ?? null,
    limits: quantities(c.resources?.limits),
  };
}

function volumeView(v: V1Volume): Record<string, unknown> & { name: string } {
  const { name, emptyDir, ...other } = v;
  return {
    name,
    emptyDir: emptyDir ? { medium: emptyDir.medium ?? "", sizeLimit: quantity(emptyDir.sizeLimit) } : null,
    // Any other source (hostPath, a secret, a projected token, a claim…) is compared as given.
    ...other,
  };
}

function byName<T extends { name: string }>(items: T[]): Record<string, T> {
  return Object.fromEntries(items.map((item) => [item.name, item]));
}

const SUFFIXES: Record<string, number> = {
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
  Ti: 1024 ** 4,
  m: 0.001,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
};

/** A quantity's value ("1Gi", "1073741824" and "1024Mi" are the same), as the API server canonicalises them. */
export function quantity(text: string | undefined): number | null {
  if (text === undefined) return null;
  const match = /^([0-9.]+)([A-Za-z]*)$/.exec(String(text).trim());
  if (!match) return Number.NaN;
  const unit = match[2] ?? "";
  const factor = unit === "" ? 1 : SUFFIXES[unit];
  return factor === undefined ? Number.NaN : Number(match[1]) * factor;
}

function quantities(values: Record<string, string> | undefined): Record<string, number | null> {
  return Object.fromEntries(Object.entries(values ?? {}).map(([key, value]) => [key, quantity(value)]));
}

function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? "nothing";
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/** The first field where `actual` differs from `expected`, as "path is X where harness's pod has Y". */
function firstDifference(expected: unknown, actual: unknown, path: string): string | undefined {
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === "object" && v !== null && !Array.isArray(v);
  if (isObject(expected) && isObject(actual)) {
    for (const key of new Set([...Object.keys(expected), ...Object.keys(actual)])) {
      const difference = firstDifference(expected[key], actual[key], path === "" ? key : `${path}.${key}`);
      if (difference !== undefined) return difference;
    }
    return undefined;
  }
  if (Array.isArray(expected) && Array.isArray(actual) && expected.length === actual.length) {
    for (const [index, item] of expected.entries()) {
      const difference = firstDifference(item, actual[index], `${path}[${index}]`);
      if (difference !== undefined) return difference;
    }
    return undefined;
  }
  if (JSON.stringify(expected) === JSON.stringify(actual)) return undefined;
  if (actual === undefined) return `${path} is missing where harness's pod has ${shown(expected)}`;
  if (expected === undefined) return `${path} is ${shown(actual)}, which harness's pod does not have`;
  return `${path} is ${shown(actual)} where harness's pod has ${shown(expected)}`;
}

/**
 * Undefined when `actual` is hardened as `expected` (harness's manifest for the same settings), else
 * the first field that is not, e.g. "containers.sandbox.securityContext.privileged is true where
 * harness's pod has false".
 */
export function hardeningDifference(expected: V1Pod, actual: V1Pod): string | undefined {
  return firstDifference(hardeningView(expected), hardeningView(actual), "");
}
