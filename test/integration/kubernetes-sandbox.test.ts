/**
 * The Kubernetes engine beyond the conformance set, on the cluster in HARNESS_TEST_KUBECONFIG: the
 * hardening as the API server holds it and as a command sees it, the network, a pod deleted under a
 * command, nothing left after stop (nor after a harness process died), bind refused, and a copy that
 * cannot be read whole.
 */
import { spawnSync } from "node:child_process";
import { realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError, SandboxError } from "../../src/errors.js";
import { LABEL_OWNER_PID } from "../../src/sandbox/docker/container/labels.js";
import { defaultPodImage } from "../../src/sandbox/kubernetes/kubernetes-sandbox.js";
import { listHarnessPods } from "../../src/sandbox/kubernetes/pod/pod-registry.js";
import { podManifest, podName } from "../../src/sandbox/kubernetes/pod/pod-spec.js";
import { warmPod } from "../../src/sandbox/kubernetes/warm-pod.js";
import { copyOf } from "../support/copied.js";
import {
  openTestSandbox,
  skipKubernetes,
  TEST_NAMESPACE,
  testCluster,
  testKubeconfig,
} from "../support/kubernetes-available.js";
import { makeWorkspace } from "../support/workspace.js";

const open = openTestSandbox;
const cluster = testCluster;

describe.skipIf(skipKubernetes)("KubernetesSandbox", { timeout: 180_000 }, () => {
  it("the hardening, read back from the API server", async () => {
    using ws = makeWorkspace();
    await using sandbox = await open(ws.path);
    const pod = await cluster().core.readNamespacedPod({ name: sandbox.podName, namespace: TEST_NAMESPACE });
    const spec = pod.spec;
    expect(spec).toMatchObject({
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      restartPolicy: "Never",
    });
    // The API server leaves out fields at their default (false).
    for (const shared of [spec?.hostNetwork, spec?.hostPID, spec?.hostIPC, spec?.shareProcessNamespace]) {
      expect(shared ?? false).toBe(false);
    }
    const sandboxContainer = spec?.containers.find((c) => c.name === "sandbox");
    expect(sandboxContainer?.securityContext).toMatchObject({
      runAsUser: 0,
      privileged: false,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ["ALL"], add: ["SETUID", "SETGID"] },
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(spec?.initContainers?.[0]?.securityContext?.capabilities).toEqual({
      drop: ["ALL"],
      add: ["CHOWN"],
    });
    expect(sandboxContainer?.resources?.limits).toEqual({ cpu: "2", memory: String(2 * 1024 ** 3) });
    expect(
      spec?.volumes?.filter((v) => v.emptyDir?.medium === "Memory").map((v) => v.emptyDir?.sizeLimit),
    ).toEqual(["512Mi", "256Mi", "1Mi"]);
  });

  it("the hardening from inside: a command has no capabilities, no_new_privs, seccomp, not uid 0, only lo", async () => {
    using ws = makeWorkspace();
    await using sandbox = await open(ws.path);
    const status = await sandbox.exec("grep -E '^(Uid|CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status");
    expect(status.stdout).toMatch(/^Uid:\s+1000\s+1000\s+1000\s+1000$/m);
    expect(status.stdout).toMatch(/^CapEff:\s+0+$/m);
    // The bounding set is the container's: SETGID (6) and SETUID (7), nothing else to regain.
    expect(status.stdout).toMatch(/^CapBnd:\s+0+c0$/m);
    expect(status.stdout).toMatch(/^NoNewPrivs:\s+1$/m);
    expect(status.stdout).toMatch(/^Seccomp:\s+2$/m);
    expect((await sandbox.exec("ls /sys/class/net")).stdout).toBe("lo\n");
    expect((await sandbox.exec("test -e /var/run/secrets/kubernetes.io/serviceaccount")).exitCode).toBe(1);
    // The machinery (PID 1) is root holding SETUID and SETGID only; the command cannot signal it.
    const init = await sandbox.exec("grep -E '^(Uid|CapEff):' /proc/1/status; kill -9 1");
    expect(init.stdout).toMatch(/^Uid:\s+0\s+0\s+0\s+0$/m);
    expect(init.stdout).toMatch(/^CapEff:\s+0+c0$/m);
    expect(init.stderr).toMatch(/Operation not permitted/);
    const rootfs = await sandbox.exec("touch /etc/owned");
    expect(rootfs.stderr).toMatch(/Read-only file system/);
  });

  it("harness's own seccomp profile as Localhost refuses set-id mode bits; the runtime's default does not", async () => {
    using ws = makeWorkspace();
    const setId = "touch f && chmod u+s f; stat -c %A f";
    {
      await using sandbox = await open(ws.path, { seccompProfile: "harness/sandbox.json" });
      const pod = await cluster().core.readNamespacedPod({
        name: sandbox.podName,
        namespace: TEST_NAMESPACE,
      });
      expect(pod.spec?.containers[0]?.securityContext?.seccompProfile).toEqual({
        type: "Localhost",
        localhostProfile: "harness/sandbox.json",
      });
      const refused = await sandbox.exec(setId);
      expect(refused.stderr).toMatch(/Operation not permitted/);
      expect(refused.stdout).toBe("-rw-r--r--\n");
    }
    await using plain = await open(ws.path);
    expect((await plain.exec(setId)).stdout).toBe("-rwSr--r--\n");
  });

  it("kill -9 -1 ends the command's processes, not the sandbox: the next command runs", async () => {
    using ws = makeWorkspace();
    await using sandbox = await open(ws.path);
    // bash's kill spares bash itself: everything else of the uid goes, the machinery (root) stays.
    await sandbox.exec("sleep 300 & sleep 301 & kill -9 -1; true");
    const after = await sandbox.exec("ps -eo args");
    expect(after.exitCode).toBe(0);
    expect(after.stdout).not.toMatch(/sleep 30[01]/);
    expect(await sandbox.exec("echo alive")).toMatchObject({ stdout: "alive\n", exitCode: 0 });
  });

  it("a pod deleted under a running command ends the call with a SandboxError that says so", async () => {
    using ws = makeWorkspace();
    const sandbox = await open(ws.path);
    try {
      const running = sandbox.exec("echo started; sleep 120", {
        timeoutMs: 150_000,
        onOutput: () => {
          // Once the command has surely started, the pod goes.
          cluster()
            .core.deleteNamespacedPod({
              name: sandbox.podName,
              namespace: TEST_NAMESPACE,
              gracePeriodSeconds: 0,
            })
            .catch(() => {});
        },
      });
      const error = await running.then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(SandboxError);
      expect((error as Error).message).toMatch(/pod (was deleted|is being deleted|'s container ended)/);
      expect((error as Error).message).toContain(sandbox.podName);
    } finally {
      await sandbox.stop();
    }
  });

  it("leaves no pod after stop", async () => {
    using ws = makeWorkspace();
    const sandbox = await open(ws.path);
    expect((await listHarnessPods(cluster(), realpathSync(ws.path))).map((p) => p.name)).toEqual([
      sandbox.podName,
    ]);
    await sandbox.stop();
    expect(await listHarnessPods(cluster(), realpathSync(ws.path))).toEqual([]);
  });

  it("a pod whose harness process died (kill -9) is deleted by the next open", async () => {
    using ws = makeWorkspace();
    const dead = spawnSync("true").pid ?? 0;
    const name = podName(realpathSync(ws.path));
    const manifest = podManifest(
      {
        namespace: TEST_NAMESPACE,
        image: defaultPodImage(),
        workspace: realpathSync(ws.path),
        workdir: "/workspace",
        user: "1000:1000",
        network: "none",
        memoryBytes: 64 * 1024 ** 2,
        cpus: 0.1,
        tmpSizeMiB: 1,
        homeSizeMiB: 1,
      },
      name,
      "orphan",
    );
    const annotations = manifest.metadata?.annotations ?? {};
    annotations[LABEL_OWNER_PID] = String(dead);
    await cluster().core.createNamespacedPod({ namespace: TEST_NAMESPACE, body: manifest });
    await using sandbox = await open(ws.path);
    const left = (await listHarnessPods(cluster(), realpathSync(ws.path))).map((p) => p.name);
    expect(left).toEqual([sandbox.podName]);
  });

  it("takes the pod the warm pool made for it; one made from other settings is deleted instead", async () => {
    using ws = makeWorkspace();
    const base = { workspace: ws.path, kubeconfig: testKubeconfig, namespace: TEST_NAMESPACE };
    const warm = await warmPod(base, "pool-a");
    await using sandbox = await open(ws.path, { warmPod: warm.name });
    expect(sandbox.podName).toBe(warm.name);
    expect((await sandbox.exec("echo warm")).stdout).toBe("warm\n");
    const other = await warmPod({ ...base, memoryBytes: 256 * 1024 ** 2 }, "pool-a");
    await using fresh = await open(ws.path, { warmPod: other.name });
    expect(fresh.podName).not.toBe(other.name);
    const names = (await listHarnessPods(cluster(), realpathSync(ws.path))).map((p) => p.name).sort();
    expect(names).toEqual([sandbox.podName, fresh.podName].sort());
  });

  it("refuses bind isolation in one line, before any pod exists", async () => {
    using ws = makeWorkspace();
    const error = await open(ws.path, { isolation: "bind", isolationExplicit: true }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).not.toContain("\n");
    expect((error as Error).message).toMatch(/cannot mount this machine's directory/);
    expect(await listHarnessPods(cluster(), realpathSync(ws.path))).toEqual([]);
  });

  it("a copy with a file the sandbox made unreadable is not read as a deletion: nothing is applied", async () => {
    using ws = makeWorkspace();
    writeFileSync(join(ws.path, "keep.txt"), "keep\n");
    await using sandbox = await open(ws.path);
    await sandbox.exec("chmod 000 keep.txt && echo new > new.txt");
    const error = await copyOf(sandbox)
      .exportChanges()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(error).toBeInstanceOf(SandboxError);
    expect((error as Error).message).toMatch(/reading the sandbox's workspace failed.*Permission denied/);
  });
});
