import type { V1PodSpec } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { HOME_DIR, MACHINERY_CAPS } from "../../../../src/sandbox/docker/container/container-spec.js";
import { STATE_DIR } from "../../../../src/sandbox/exec/exec-scripts.js";
import {
  ANNOTATION_WORKSPACE,
  LABEL_MANAGED,
  type PodSettings,
  podManifest,
  podName,
  SANDBOX_CONTAINER,
} from "../../../../src/sandbox/kubernetes/pod/pod-spec.js";

const settings: PodSettings = {
  namespace: "harness",
  image: "harness-sandbox:abc",
  workspace: "/home/me/My Project!",
  workdir: "/workspace",
  user: "1000:1000",
  network: "none",
  memoryBytes: 2 * 1024 ** 3,
  cpus: 2,
  tmpSizeMiB: 512,
  homeSizeMiB: 256,
};

describe("the sandbox pod: Docker's hardening field by field", () => {
  const pod = podManifest(settings, podName(settings.workspace), "session-1");
  const spec = pod.spec as V1PodSpec;
  const sandbox = spec.containers?.find((c) => c.name === SANDBOX_CONTAINER);
  const setup = spec.initContainers?.[0];

  it("machinery as root with only SETUID and SETGID, no escalation, seccomp, read-only root", () => {
    expect(sandbox?.securityContext).toEqual({
      runAsUser: 0,
      runAsGroup: 0,
      runAsNonRoot: false,
      privileged: false,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"], add: [...MACHINERY_CAPS] },
      seccompProfile: { type: "RuntimeDefault" },
      procMount: "Default",
    });
    expect(spec.securityContext?.seccompProfile).toEqual({ type: "RuntimeDefault" });
  });

  it("the setup container holds CHOWN only, and hands the user its directories", () => {
    expect(setup?.securityContext?.capabilities).toEqual({ drop: ["ALL"], add: ["CHOWN"] });
    expect(setup?.securityContext?.allowPrivilegeEscalation).toBe(false);
    expect(setup?.securityContext?.readOnlyRootFilesystem).toBe(true);
    expect(setup?.command?.slice(4)).toEqual(["1000", "1000", "1", HOME_DIR, STATE_DIR, "/workspace"]);
  });

  it("no token, no service links, no host namespaces, nothing restarted", () => {
    expect(spec).toMatchObject({
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      hostNetwork: false,
      hostPID: false,
      hostIPC: false,
      shareProcessNamespace: false,
      restartPolicy: "Never",
      terminationGracePeriodSeconds: 1,
    });
    expect(spec.runtimeClassName).toBeUndefined();
    expect(spec.nodeName).toBeUndefined();
  });

  it("limits as asked, requests small enough for many pods on a node, never above the limits", () => {
    expect(sandbox?.resources?.limits).toEqual({ cpu: "2", memory: String(2 * 1024 ** 3) });
    expect(sandbox?.resources?.requests).toEqual({ cpu: "50m", memory: "64Mi" });
    const tiny = podManifest({ ...settings, memoryBytes: 32 * 1024 ** 2, cpus: 0.01 }, "p", "s");
    expect(tiny.spec?.containers[0]?.resources?.requests).toEqual({
      cpu: "0.01",
      memory: String(32 * 1024 ** 2),
    });
  });

  it("sized memory-backed emptyDirs where Docker has tmpfs; the workspace on disk", () => {
    expect(spec.volumes).toEqual([
      { name: "tmp", emptyDir: { medium: "Memory", sizeLimit: "512Mi" } },
      { name: "home", emptyDir: { medium: "Memory", sizeLimit: "256Mi" } },
      { name: "state", emptyDir: { medium: "Memory", sizeLimit: "1Mi" } },
      { name: "workspace", emptyDir: {} },
    ]);
    expect(sandbox?.volumeMounts?.map((m) => m.mountPath)).toEqual([
      "/tmp",
      HOME_DIR,
      STATE_DIR,
      "/workspace",
    ]);
  });

  it("the environment is the sandbox's own, nothing from the host", () => {
    const names = sandbox?.env?.map((e) => e.name);
    expect(names).toContain("PATH");
    expect(names).toContain("HOME");
    expect(names).not.toContain("KUBECONFIG");
    expect(sandbox?.env?.find((e) => e.name === "HOME")?.value).toBe(HOME_DIR);
  });

  it("labels ps and rm find, valid as label values; the path as an annotation", () => {
    const labels = pod.metadata?.labels ?? {};
    expect(labels[LABEL_MANAGED]).toBe("true");
    for (const value of Object.values(labels))
      expect(value).toMatch(/^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$/);
    expect(pod.metadata?.annotations?.[ANNOTATION_WORKSPACE]).toBe(settings.workspace);
  });

  it("runtime class, node, and the pod network when asked", () => {
    const other = podManifest(
      { ...settings, runtimeClassName: "gvisor", nodeName: "n1", network: "pod" },
      "p",
      "s",
    );
    expect(other.spec?.runtimeClassName).toBe("gvisor");
    expect(other.spec?.nodeName).toBe("n1");
    expect(other.spec?.initContainers?.[0]?.command?.[6]).toBe("0");
  });
});

describe("--kube-seccomp-profile", () => {
  it("puts the Localhost profile on the pod and both containers", () => {
    const pod = podManifest({ ...settings, seccompProfile: "harness/sandbox.json" }, "p", "s");
    const want = { type: "Localhost", localhostProfile: "harness/sandbox.json" };
    expect(pod.spec?.securityContext?.seccompProfile).toEqual(want);
    expect(pod.spec?.containers[0]?.securityContext?.seccompProfile).toEqual(want);
    expect(pod.spec?.initContainers?.[0]?.securityContext?.seccompProfile).toEqual(want);
  });
});

describe("podName", () => {
  it("is a DNS-1123 name, different each time", () => {
    for (const ws of [
      "/home/me/My Project!",
      "/x/---",
      "/",
      "/a/ÜBER_lang_name_that_goes_on_and_on_and_on_forever",
    ]) {
      const name = podName(ws);
      expect(name).toMatch(/^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/);
      expect(name.length).toBeLessThanOrEqual(63);
    }
    expect(podName("/a")).not.toBe(podName("/a"));
  });
});
