/**
 * `--kube-warm-pool`: the pod claimed from a SandboxWarmPool of kubernetes-sigs/agent-sandbox, on the
 * cluster in HARNESS_TEST_KUBECONFIG with agent-sandbox's controller running
 * (HARNESS_K8S_AGENT_SANDBOX=1 bash scripts/ensure-k8s.sh). A pre-warmed pod is claimed, runs the
 * commands as the workspace user, and the claim, its Sandbox and its pod are gone after stop (and
 * after the harness process died, at the next open; `harness ps` lists it and `harness rm` releases
 * it); a pool
 * whose template weakens harness's pod is refused in one line, before any workspace or command.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { CustomObjectsApi, type V1PodSpec } from "@kubernetes/client-node";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import {
  LABEL_OWNER_BOOT_ID,
  LABEL_OWNER_HOST,
  LABEL_OWNER_PID,
  LABEL_OWNER_PID_NS,
} from "../../src/sandbox/docker/container/labels.js";
import { ownerIdentity } from "../../src/sandbox/docker/isolation/labels/copy-container-labels.js";
import { apiStatus } from "../../src/sandbox/kubernetes/api/kube-client.js";
import { LABEL_MANAGED, SANDBOX_CONTAINER } from "../../src/sandbox/kubernetes/pod/pod-spec.js";
import { sandboxTemplate } from "../../src/sandbox/kubernetes/sandbox-template.js";
import {
  kubernetesRequired,
  openTestSandbox,
  skipKubernetes,
  TEST_NAMESPACE,
  testCluster,
  testKubeconfig,
} from "../support/kubernetes-available.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace, TEST_UID } from "../support/workspace.js";

const EXT = { group: "extensions.agents.x-k8s.io", version: "v1beta1", namespace: TEST_NAMESPACE };
const CORE = { group: "agents.x-k8s.io", version: "v1beta1", namespace: TEST_NAMESPACE };
const cluster = testCluster;
const custom = () => cluster().kc.makeApiClient(CustomObjectsApi);

/** agent-sandbox's extensions must be on the cluster; in CI their absence fails, never skips. */
async function agentSandboxProblem(): Promise<string | undefined> {
  if (skipKubernetes) return undefined;
  try {
    await custom().listNamespacedCustomObject({ ...EXT, plural: "sandboxwarmpools" });
    return undefined;
  } catch (error) {
    return `agent-sandbox's extensions are not on the cluster (HARNESS_K8S_AGENT_SANDBOX=1 bash scripts/ensure-k8s.sh): ${(error as Error).message}`;
  }
}
const noAgentSandbox = await agentSandboxProblem();
if (noAgentSandbox !== undefined && kubernetesRequired()) throw new Error(noAgentSandbox);

type Weaken = (spec: V1PodSpec) => void;
const pools: string[] = [];

async function waitFor<T>(what: string, read: () => Promise<T | undefined>, seconds = 120): Promise<T> {
  const until = Date.now() + seconds * 1000;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > until) throw new Error(`${what}: not after ${seconds} s`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/** The SandboxTemplate of harness's own pod for `workspace` (changed by `weaken`) and a pool of it, ready. */
async function makePool(workspace: string, replicas: number, weaken?: Weaken): Promise<string> {
  const name = `harness-test-pool-${randomBytes(3).toString("hex")}`;
  pools.push(name);
  // What `harness kube-template NAME` prints.
  const template = (await sandboxTemplate(
    { workspace, kubeconfig: testKubeconfig, namespace: TEST_NAMESPACE },
    name,
  )) as { spec: { podTemplate: { spec: V1PodSpec } } };
  weaken?.(template.spec.podTemplate.spec);
  const api = custom();
  await api.createNamespacedCustomObject({ ...EXT, plural: "sandboxtemplates", body: template });
  await api.createNamespacedCustomObject({
    ...EXT,
    plural: "sandboxwarmpools",
    body: {
      apiVersion: "extensions.agents.x-k8s.io/v1beta1",
      kind: "SandboxWarmPool",
      metadata: { name },
      spec: { replicas, sandboxTemplateRef: { name } },
    },
  });
  await waitFor(`pool ${name} ready`, async () => {
    const pool = (await api.getNamespacedCustomObject({ ...EXT, plural: "sandboxwarmpools", name })) as {
      status?: { readyReplicas?: number };
    };
    return pool.status?.readyReplicas === replicas ? true : undefined;
  });
  return name;
}

/** The Sandboxes the pool owns now (their pods have the same names). */
async function poolSandboxes(pool: string): Promise<string[]> {
  const list = (await custom().listNamespacedCustomObject({ ...CORE, plural: "sandboxes" })) as {
    items: { metadata: { name: string; ownerReferences?: { kind: string; name: string }[] } }[];
  };
  return list.items
    .filter((s) => s.metadata.ownerReferences?.some((o) => o.kind === "SandboxWarmPool" && o.name === pool))
    .map((s) => s.metadata.name);
}

/** The claims harness made on `pool` that still exist. */
async function claimsOn(pool: string): Promise<string[]> {
  const list = (await custom().listNamespacedCustomObject({ ...EXT, plural: "sandboxclaims" })) as {
    items: { metadata: { name: string }; spec: { warmPoolRef: { name: string } } }[];
  };
  return list.items.filter((c) => c.spec.warmPoolRef.name === pool).map((c) => c.metadata.name);
}

async function gone(read: () => Promise<unknown>): Promise<boolean | undefined> {
  try {
    await read();
    return undefined;
  } catch (error) {
    if (apiStatus(error) === 404) return true;
    throw error;
  }
}

/** Pods whose owning Sandbox is gone: a cluster's garbage collector would delete them; none runs here. */
async function podsOfDeletedSandboxes(): Promise<string[]> {
  const pods = await cluster().core.listNamespacedPod({ namespace: TEST_NAMESPACE });
  const left: string[] = [];
  for (const pod of pods.items) {
    const owner = pod.metadata?.ownerReferences?.find((o) => o.kind === "Sandbox");
    if (owner === undefined || pod.metadata?.deletionTimestamp) continue;
    const sandbox = () =>
      custom().getNamespacedCustomObject({ ...CORE, plural: "sandboxes", name: owner.name });
    if (await gone(sandbox)) left.push(pod.metadata?.name ?? "");
  }
  return left;
}

/**
 * The pool, then what it owns, then its template. The pool is let finish making its pods first: a
 * Sandbox deleted while the controller makes its pod would leave that pod behind.
 */
async function removePool(name: string): Promise<void> {
  const api = custom();
  const quiet = (promise: Promise<unknown>) => promise.catch(() => {});
  await quiet(
    waitFor(
      `pool ${name} settled`,
      async () => {
        const pool = (await api.getNamespacedCustomObject({ ...EXT, plural: "sandboxwarmpools", name })) as {
          spec?: { replicas?: number };
          status?: { readyReplicas?: number };
        };
        return pool.status?.readyReplicas === pool.spec?.replicas ? true : undefined;
      },
      60,
    ),
  );
  await quiet(api.deleteNamespacedCustomObject({ ...EXT, plural: "sandboxwarmpools", name }));
  for (const sandbox of await poolSandboxes(name)) {
    await quiet(api.deleteNamespacedCustomObject({ ...CORE, plural: "sandboxes", name: sandbox }));
    await quiet(
      cluster().core.deleteNamespacedPod({ name: sandbox, namespace: TEST_NAMESPACE, gracePeriodSeconds: 0 }),
    );
  }
  for (const pod of await podsOfDeletedSandboxes()) {
    await quiet(
      cluster().core.deleteNamespacedPod({ name: pod, namespace: TEST_NAMESPACE, gracePeriodSeconds: 0 }),
    );
  }
  await quiet(api.deleteNamespacedCustomObject({ ...EXT, plural: "sandboxtemplates", name }));
  await quiet(
    cluster()
      .kc.makeApiClient((await import("@kubernetes/client-node")).NetworkingV1Api)
      .deleteNamespacedNetworkPolicy({ name: `${name}-network-policy`, namespace: TEST_NAMESPACE }),
  );
}

const open = (workspace: string, warmPool: string) => openTestSandbox(workspace, { warmPool });

describe.skipIf(skipKubernetes || noAgentSandbox !== undefined)(
  "--kube-warm-pool",
  { timeout: 240_000 },
  () => {
    afterAll(async () => {
      for (const pool of pools) await removePool(pool);
    });

    it("claims a pre-warmed pod, runs commands in it as the workspace user, and releases it at stop", async () => {
      using ws = makeWorkspace();
      writeFileSync(join(ws.path, "hello.txt"), "copied in\n");
      const pool = await makePool(ws.path, 2);
      const warm = await poolSandboxes(pool);
      expect(warm).toHaveLength(2);

      const sandbox = await open(ws.path, pool);
      const claimed = sandbox.podName;
      try {
        expect(warm).toContain(claimed);
        const id = await sandbox.exec(
          "id -u; grep -E '^(CapEff|NoNewPrivs):' /proc/self/status; cat hello.txt",
        );
        expect(id.exitCode).toBe(0);
        expect(id.stdout).toMatch(new RegExp(`^${TEST_UID}\\n`));
        expect(id.stdout).not.toMatch(/^0\n/);
        expect(id.stdout).toMatch(/^CapEff:\s+0+$/m);
        expect(id.stdout).toMatch(/^NoNewPrivs:\s+1$/m);
        expect(id.stdout).toContain("copied in");
        expect((await sandbox.exec("ls /sys/class/net")).stdout).toBe("lo\n");
        // The claimed pod left the pool, which makes another.
        expect(await claimsOn(pool)).toHaveLength(1);
      } finally {
        await sandbox.stop();
      }

      // Nothing of the claim is left: the claim, its Sandbox, its pod.
      expect(await claimsOn(pool)).toEqual([]);
      expect(
        await gone(() => custom().getNamespacedCustomObject({ ...CORE, plural: "sandboxes", name: claimed })),
      ).toBe(true);
      await waitFor(
        `pod ${claimed} gone`,
        () => gone(() => cluster().core.readNamespacedPod({ name: claimed, namespace: TEST_NAMESPACE })),
        60,
      );
    });

    it("a claim whose harness process died (kill -9) is released, with its Sandbox and pod, by the next open", async () => {
      using ws = makeWorkspace();
      const pool = await makePool(ws.path, 2);
      // A claim as a harness process that is gone left it: this machine, this boot, a pid that has exited.
      const here = ownerIdentity();
      const dead = spawnSync("true").pid ?? 0;
      const orphan = `harness-claim-orphan-${randomBytes(3).toString("hex")}`;
      await custom().createNamespacedCustomObject({
        ...EXT,
        plural: "sandboxclaims",
        body: {
          apiVersion: "extensions.agents.x-k8s.io/v1beta1",
          kind: "SandboxClaim",
          metadata: {
            name: orphan,
            labels: { [LABEL_MANAGED]: "true" },
            annotations: {
              [LABEL_OWNER_HOST]: here.host,
              [LABEL_OWNER_BOOT_ID]: here.bootId,
              [LABEL_OWNER_PID_NS]: here.pidNs,
              [LABEL_OWNER_PID]: String(dead),
            },
          },
          spec: { warmPoolRef: { name: pool } },
        },
      });
      const orphanPod = await waitFor(`claim ${orphan} given a sandbox`, async () => {
        const claim = (await custom().getNamespacedCustomObject({
          ...EXT,
          plural: "sandboxclaims",
          name: orphan,
        })) as {
          status?: { sandbox?: { name?: string } };
        };
        return claim.status?.sandbox?.name || undefined;
      });

      const sandbox = await open(ws.path, pool);
      try {
        expect(sandbox.podName).not.toBe(orphanPod);
        expect(await claimsOn(pool)).toHaveLength(1);
        expect(
          await gone(() =>
            custom().getNamespacedCustomObject({ ...CORE, plural: "sandboxes", name: orphanPod }),
          ),
        ).toBe(true);
        await waitFor(
          `pod ${orphanPod} gone`,
          () => gone(() => cluster().core.readNamespacedPod({ name: orphanPod, namespace: TEST_NAMESPACE })),
          60,
        );
      } finally {
        await sandbox.stop();
        // Left by a failing run: the pool's removal does not reach a claimed Sandbox.
        await custom()
          .deleteNamespacedCustomObject({ ...EXT, plural: "sandboxclaims", name: orphan })
          .catch(() => {});
        await custom()
          .deleteNamespacedCustomObject({ ...CORE, plural: "sandboxes", name: orphanPod })
          .catch(() => {});
        await cluster()
          .core.deleteNamespacedPod({ name: orphanPod, namespace: TEST_NAMESPACE, gracePeriodSeconds: 0 })
          .catch(() => {});
      }
    });

    it("harness ps lists the claimed pod with its pool, and harness rm releases claim, Sandbox and pod", async () => {
      using ws = makeWorkspace();
      using other = makeWorkspace();
      const pool = await makePool(ws.path, 2);
      const sandbox = await open(ws.path, pool);
      const claimed = sandbox.podName;
      const cli = (args: string[]) =>
        runCli([...args, "--engine", "kubernetes"], {
          env: { KUBECONFIG: testKubeconfig ?? "", HARNESS_NAMESPACE: TEST_NAMESPACE },
        });
      try {
        const ps = await cli(["ps"]);
        expect(ps.code).toBe(0);
        const row = ps.stdout.split("\n").find((line) => line.startsWith(`${claimed} `)) ?? "";
        expect(row).toMatch(new RegExp(`Running, claimed from ${pool} \\(harness-claim-[0-9a-f]+\\)`));
        expect(row).toContain(ws.path);

        // Another workspace's rm leaves the claim alone; this workspace's releases it.
        expect((await cli(["rm", "--workspace", other.path])).stdout).not.toContain(claimed);
        expect(await claimsOn(pool)).toHaveLength(1);
        const rm = await cli(["rm", "--workspace", ws.path]);
        expect(rm.code).toBe(0);
        expect(rm.stdout).toMatch(
          new RegExp(
            `released claim ${TEST_NAMESPACE}/harness-claim-[0-9a-f]+ on the warm pool ${pool} with its pod ${claimed}`,
          ),
        );
        expect(await claimsOn(pool)).toEqual([]);
        expect(
          await gone(() =>
            custom().getNamespacedCustomObject({ ...CORE, plural: "sandboxes", name: claimed }),
          ),
        ).toBe(true);
        await waitFor(
          `pod ${claimed} gone`,
          () => gone(() => cluster().core.readNamespacedPod({ name: claimed, namespace: TEST_NAMESPACE })),
          60,
        );
      } finally {
        // What rm released is gone already: the stop's release finds nothing and is fine with that.
        await sandbox.stop();
      }
      expect((await cli(["ps"])).stdout).not.toContain(claimed);
    });

    const weakenings: [string, Weaken, RegExp][] = [
      [
        "a hostPath volume",
        (spec) => {
          spec.volumes?.push({ name: "host", hostPath: { path: "/" } });
          spec.containers[0]?.volumeMounts?.push({ name: "host", mountPath: "/host", readOnly: true });
        },
        /volumes\.host is .*hostPath/,
      ],
      [
        "CAP_SYS_ADMIN for the sandbox container",
        (spec) => {
          const c = spec.containers.find((x) => x.name === SANDBOX_CONTAINER);
          if (c?.securityContext) c.securityContext.capabilities = { drop: ["ALL"], add: ["SYS_ADMIN"] };
        },
        /containers\.sandbox\.securityContext\.capabilities\.add is \["SYS_ADMIN"\] where harness's pod has \["SETUID","SETGID"\]/,
      ],
      [
        "the commands' user as root (setup made for uid 0)",
        (spec) => {
          const setup = spec.initContainers?.[0];
          if (setup) setup.command = (setup.command ?? []).map((a) => (a === String(TEST_UID) ? "0" : a));
        },
        /initContainers\.setup\.command\[\d\] is "0" where harness's pod has "1000"/,
      ],
    ];
    for (const [what, weaken, field] of weakenings) {
      it(`refuses a pool whose template gives ${what}, in one line, and releases the claim`, async () => {
        using ws = makeWorkspace();
        const pool = await makePool(ws.path, 1, weaken);
        const [weakPod] = await poolSandboxes(pool);
        const error = await open(ws.path, pool).then(
          // Accepted: stopped at once, so that nothing is left, and the test fails below.
          (sandbox) => sandbox.stop(),
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(ConfigError);
        const message = (error as Error).message;
        expect(message).toMatch(new RegExp(`^--kube-warm-pool ${pool}: refused the pool's pod ${weakPod}`));
        expect(message).toMatch(field);
        expect(message).not.toContain("\n");
        expect(await claimsOn(pool)).toEqual([]);
        await waitFor(
          `pod ${weakPod} gone`,
          () =>
            gone(() => cluster().core.readNamespacedPod({ name: weakPod ?? "", namespace: TEST_NAMESPACE })),
          60,
        );
      });
    }
  },
);
