import type { V1Container, V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { hardeningDifference, quantity } from "../../../../src/sandbox/kubernetes/pod/pod-hardening.js";
import {
  type PodSettings,
  podManifest,
  SANDBOX_CONTAINER,
} from "../../../../src/sandbox/kubernetes/pod/pod-spec.js";

const settings: PodSettings = {
  namespace: "harness",
  image: "harness-sandbox:abc",
  workspace: "/home/me/project",
  workdir: "/workspace",
  user: "1000:1000",
  network: "none",
  memoryBytes: 2 * 1024 ** 3,
  cpus: 2,
  tmpSizeMiB: 512,
  homeSizeMiB: 256,
};

const expected = () => podManifest(settings, "harness-project-1", "session-1");

/** A pod as the warm pool made it: harness's manifest, changed by `weaken`. */
function claimed(weaken: (pod: V1Pod & { spec: NonNullable<V1Pod["spec"]> }) => void): V1Pod {
  const pod = structuredClone(expected()) as V1Pod & { spec: NonNullable<V1Pod["spec"]> };
  weaken(pod);
  return pod;
}
const sandbox = (pod: V1Pod): V1Container =>
  pod.spec?.containers.find((c) => c.name === SANDBOX_CONTAINER) as V1Container;
const setup = (pod: V1Pod): V1Container => pod.spec?.initContainers?.[0] as V1Container;

describe("a claimed pod is checked against harness's own manifest", () => {
  it("accepts the pod as the cluster and the agent-sandbox controller return it", () => {
    const pod = claimed((p) => {
      // What the API server fills in or canonicalises, and what the controller sets.
      p.metadata = { name: "harness-pool-abcde", labels: { "agents.x-k8s.io/warm-pool-sandbox": "x" } };
      p.spec.nodeName = "node-1";
      p.spec.dnsPolicy = "None";
      p.spec.dnsConfig = { nameservers: ["8.8.8.8"] };
      p.spec.tolerations = [{ key: "node.kubernetes.io/not-ready", operator: "Exists", effect: "NoExecute" }];
      delete p.spec.hostNetwork;
      delete p.spec.hostPID;
      delete p.spec.hostIPC;
      p.spec.serviceAccountName = "default";
      const c = sandbox(p);
      c.terminationMessagePath = "/dev/termination-log";
      delete c.stdin;
      delete c.tty;
      if (c.resources?.limits) c.resources.limits["memory"] = "2Gi";
      c.resources = { ...c.resources, requests: { cpu: "100m", memory: "1Gi" } };
    });
    expect(hardeningDifference(expected(), pod)).toBeUndefined();
  });

  // Each weakening a template's author could make, and the field the refusal names.
  const weakenings: [string, (pod: V1Pod & { spec: NonNullable<V1Pod["spec"]> }) => void, RegExp][] = [
    [
      "a privileged container",
      (p) => Object.assign(sandbox(p).securityContext ?? {}, { privileged: true }),
      /containers\.sandbox\.securityContext\.privileged is true where harness's pod has false/,
    ],
    [
      "commands' machinery as root with every capability",
      (p) => Object.assign(sandbox(p).securityContext ?? {}, { capabilities: { add: ["SYS_ADMIN"] } }),
      /containers\.sandbox\.securityContext\.capabilities/,
    ],
    [
      "privilege escalation allowed",
      (p) => Object.assign(sandbox(p).securityContext ?? {}, { allowPrivilegeEscalation: true }),
      /allowPrivilegeEscalation is true/,
    ],
    [
      "a writable root filesystem",
      (p) => Object.assign(sandbox(p).securityContext ?? {}, { readOnlyRootFilesystem: undefined }),
      /readOnlyRootFilesystem is missing/,
    ],
    [
      "seccomp off",
      (p) => Object.assign(sandbox(p).securityContext ?? {}, { seccompProfile: { type: "Unconfined" } }),
      /seccompProfile\.type is "Unconfined"/,
    ],
    [
      "the commands' user made root (setup for uid 0)",
      (p) => {
        const c = setup(p);
        c.command = (c.command ?? []).map((a) => (a === "1000" ? "0" : a));
      },
      /initContainers\.setup\.command\[\d\] is "0" where harness's pod has "1000"/,
    ],
    [
      "a hostPath volume",
      (p) => {
        p.spec.volumes?.push({ name: "host", hostPath: { path: "/" } });
      },
      /volumes\.host is .*hostPath/,
    ],
    [
      "a workspace volume on the host",
      (p) => {
        const v = p.spec.volumes?.find((x) => x.name === "workspace");
        if (v) {
          delete v.emptyDir;
          v.hostPath = { path: "/srv" };
        }
      },
      /volumes\.workspace\.emptyDir is null where harness's pod has/,
    ],
    [
      "the host's network",
      (p) => {
        p.spec.hostNetwork = true;
      },
      /^hostNetwork is true/,
    ],
    [
      "the host's PIDs",
      (p) => {
        p.spec.hostPID = true;
      },
      /^hostPID is true/,
    ],
    [
      "the host's IPC",
      (p) => {
        p.spec.hostIPC = true;
      },
      /^hostIPC is true/,
    ],
    [
      "the host's user namespace off",
      (p) => {
        p.spec.hostUsers = false;
      },
      /^hostUsers is false/,
    ],
    [
      "a shared process namespace",
      (p) => {
        p.spec.shareProcessNamespace = true;
      },
      /^shareProcessNamespace is true/,
    ],
    [
      "a service-account token",
      (p) => {
        delete p.spec.automountServiceAccountToken;
      },
      /^automountServiceAccountToken is true/,
    ],
    [
      "a sidecar container",
      (p) => {
        p.spec.containers.push({ name: "sidecar", image: "busybox" });
      },
      /containers\.sidecar is/,
    ],
    [
      "an ephemeral container",
      (p) => {
        p.spec.ephemeralContainers = [{ name: "debug", image: "busybox" }];
      },
      /ephemeralContainers/,
    ],
    [
      "an environment variable for the machinery",
      (p) => {
        sandbox(p).env?.push({ name: "LD_PRELOAD", value: "/tmp/x.so" });
      },
      /containers\.sandbox\.env/,
    ],
    [
      "another image",
      (p) => {
        sandbox(p).image = "evil:latest";
      },
      /containers\.sandbox\.image is "evil:latest"/,
    ],
    [
      "a larger memory limit",
      (p) => {
        if (sandbox(p).resources?.limits)
          (sandbox(p).resources as { limits: Record<string, string> }).limits["memory"] = "64Gi";
      },
      /containers\.sandbox\.limits\.memory/,
    ],
    [
      "no limits",
      (p) => {
        sandbox(p).resources = {};
      },
      /containers\.sandbox\.limits\.(cpu|memory) is missing/,
    ],
    [
      "a host port",
      (p) => {
        sandbox(p).ports = [{ containerPort: 22, hostPort: 2222 }];
      },
      /containers\.sandbox\.ports/,
    ],
    [
      "a postStart hook",
      (p) => {
        sandbox(p).lifecycle = { postStart: { exec: { command: ["sh", "-c", "x"] } } };
      },
      /containers\.sandbox\.lifecycle/,
    ],
    [
      "a pod-level runAsUser",
      (p) => {
        p.spec.securityContext = { ...p.spec.securityContext, runAsUser: 0 };
      },
      /^securityContext\.runAsUser is 0/,
    ],
    [
      "a read-write mount propagated from the host",
      (p) => {
        const m = sandbox(p).volumeMounts?.[0];
        if (m) m.mountPropagation = "Bidirectional";
      },
      /mountPropagation is "Bidirectional"/,
    ],
  ];
  for (const [what, weaken, field] of weakenings) {
    it(`refuses ${what}, naming the field`, () => {
      const difference = hardeningDifference(expected(), claimed(weaken));
      expect(difference).toMatch(field);
      expect(difference).not.toContain("\n");
    });
  }

  it("refuses a pod made for another runtime class than asked", () => {
    const gvisor = podManifest({ ...settings, runtimeClassName: "gvisor" }, "x", "s");
    expect(hardeningDifference(gvisor, expected())).toMatch(
      /^runtimeClassName is null where harness's pod has "gvisor"/,
    );
  });

  it("reads quantities as the API server canonicalises them", () => {
    expect(quantity("1Gi")).toBe(quantity("1073741824"));
    expect(quantity("1024Mi")).toBe(quantity("1Gi"));
    expect(quantity("500m")).toBe(0.5);
    expect(quantity("2")).toBe(2);
    expect(quantity(undefined)).toBeNull();
    expect(quantity("1Xi")).toBeNaN();
  });
});
