/**
 * What a cluster operator meets when the cluster says no, through the built CLI on the test cluster
 * (HARNESS_TEST_KUBECONFIG): a namespace whose Pod Security admission enforces "restricted" refuses
 * every harness pod (its PID 1 runs as uid 0 with SETUID/SETGID: a design choice), which `doctor`
 * reports and the error quotes; "baseline" admits it; a user allowed pods but not pods/exec gets one
 * line naming pods/exec. The test makes its own namespace and removes only what it made (the test
 * cluster has no namespace controller: the namespace is emptied first, then finalized by hand).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { skipKubernetes, testKubeconfig } from "../support/kubernetes-available.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";

const NAMESPACE = `harness-test-psa-${process.pid}`;
const LIMITED = "pods-without-exec";
const LEVEL = "pod-security.kubernetes.io/enforce";

function admin(): { core: CoreV1Api; rbac: RbacAuthorizationV1Api; kc: KubeConfig } {
  const kc = new KubeConfig();
  kc.loadFromFile(testKubeconfig ?? "");
  return { kc, core: kc.makeApiClient(CoreV1Api), rbac: kc.makeApiClient(RbacAuthorizationV1Api) };
}

async function label(level: string): Promise<void> {
  const { core } = admin();
  const ns = await core.readNamespace({ name: NAMESPACE });
  ns.metadata = { ...ns.metadata, labels: { ...ns.metadata?.labels, [LEVEL]: level } };
  await core.replaceNamespace({ name: NAMESPACE, body: ns });
}

/** A kubeconfig for a user of NAMESPACE that may create, read and delete pods, but not exec into them. */
async function limitedKubeconfig(dir: string): Promise<string> {
  const { core, rbac, kc } = admin();
  await core.createNamespacedServiceAccount({ namespace: NAMESPACE, body: { metadata: { name: LIMITED } } });
  await rbac.createNamespacedRole({
    namespace: NAMESPACE,
    body: {
      metadata: { name: LIMITED },
      rules: [{ apiGroups: [""], resources: ["pods"], verbs: ["create", "get", "list", "watch", "delete"] }],
    },
  });
  await rbac.createNamespacedRoleBinding({
    namespace: NAMESPACE,
    body: {
      metadata: { name: LIMITED },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: LIMITED },
      subjects: [{ kind: "ServiceAccount", name: LIMITED, namespace: NAMESPACE }],
    },
  });
  const token = await core.createNamespacedServiceAccountToken({
    name: LIMITED,
    namespace: NAMESPACE,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  const cluster = kc.getCurrentCluster();
  const file = join(dir, "limited.kubeconfig");
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        { name: "test", cluster: { server: cluster?.server, "certificate-authority-data": cluster?.caData } },
      ],
      users: [{ name: LIMITED, user: { token: token.status?.token } }],
      contexts: [{ name: LIMITED, context: { cluster: "test", user: LIMITED, namespace: NAMESPACE } }],
      "current-context": LIMITED,
    }),
  );
  return file;
}

describe.skipIf(skipKubernetes)("the cluster saying no, through the CLI", { timeout: 180_000 }, () => {
  const env = { KUBECONFIG: testKubeconfig ?? "" };
  const cli = ([command, ...args]: string[], extra: Record<string, string> = {}) =>
    runCli([command ?? "", "--engine", "kubernetes", "--namespace", NAMESPACE, ...args], {
      env: { ...env, ...extra },
    });

  beforeAll(async () => {
    const { core } = admin();
    await core.createNamespace({
      body: { metadata: { name: NAMESPACE, labels: { [LEVEL]: "restricted" } } },
    });
    // No controller-manager on the test cluster: the ServiceAccount a pod needs is made by hand.
    await core.createNamespacedServiceAccount({
      namespace: NAMESPACE,
      body: { metadata: { name: "default" } },
    });
  });

  afterAll(async () => {
    const { core, rbac } = admin();
    const quietly = (work: Promise<unknown>) => work.catch(() => {});
    await quietly(core.deleteCollectionNamespacedPod({ namespace: NAMESPACE, gracePeriodSeconds: 0 }));
    await quietly(rbac.deleteNamespacedRoleBinding({ name: LIMITED, namespace: NAMESPACE }));
    await quietly(rbac.deleteNamespacedRole({ name: LIMITED, namespace: NAMESPACE }));
    for (const name of [LIMITED, "default"])
      await quietly(core.deleteNamespacedServiceAccount({ name, namespace: NAMESPACE }));
    await quietly(core.deleteNamespace({ name: NAMESPACE }));
    // What the namespace controller would do once the namespace is empty.
    const ns = await core.readNamespace({ name: NAMESPACE }).catch(() => undefined);
    if (ns !== undefined) {
      ns.spec = { finalizers: [] };
      await quietly(core.replaceNamespaceFinalize({ name: NAMESPACE, body: ns }));
    }
  });

  it("restricted: doctor fails the namespace's Pod Security, and exec's one line quotes the admission and the fix", async () => {
    await label("restricted");
    using ws = makeWorkspace();
    const doctor = await cli(["doctor", "-w", ws.path]);
    expect(doctor.code).toBe(1);
    const line = doctor.stdout.split("\n").find((l) => l.includes(`pod security ${NAMESPACE}`)) ?? "";
    expect(line).toMatch(
      /^fail pod security .*: enforce=restricted; a dry run of harness's pod was refused: .*violates PodSecurity "restricted:latest"/,
    );
    expect(line).toContain(`(fix: harness's pod runs its PID 1 as uid 0 with CAP_SETUID and CAP_SETGID`);
    expect(line).toContain(
      `kubectl label namespace ${NAMESPACE} pod-security.kubernetes.io/enforce=baseline --overwrite`,
    );

    const exec = await cli(["exec", "-w", ws.path, "--", "true"]);
    expect(exec.code).toBe(1);
    expect(exec.stderr.trim().split("\n")).toHaveLength(1);
    expect(exec.stderr).toMatch(
      /^harness: creating the sandbox pod failed: .*violates PodSecurity "restricted:latest": .*runAsUser=0/,
    );
    expect(exec.stderr).toContain(`enforce=baseline --overwrite) or another --namespace)`);
    // Not RBAC's fault, and not said to be.
    expect(exec.stderr).not.toContain("may not create pods");
  });

  it("baseline: doctor says the pod is admitted, and the command runs as the workspace owner", async () => {
    await label("baseline");
    using ws = makeWorkspace();
    const doctor = await cli(["doctor", "-w", ws.path]);
    expect(doctor.stdout).toMatch(
      new RegExp(
        `^ok   pod security ${NAMESPACE}: enforce=baseline; a dry run of harness's pod was admitted$`,
        "m",
      ),
    );
    const exec = await cli(["exec", "-w", ws.path, "--", "id -u"]);
    expect(exec.stderr).not.toMatch(/refused|forbidden/);
    expect(exec.code).toBe(0);
    expect(exec.stdout).toBe("1000\n");
  });

  it("a user allowed pods but not pods/exec gets one line naming pods/exec, not [object Object]", async () => {
    await label("baseline");
    using ws = makeWorkspace();
    const dir = mkdtempSync(join(tmpdir(), "harness-kube-"));
    const kubeconfig = await limitedKubeconfig(dir);
    const exec = await cli(["exec", "-w", ws.path, "--", "true"], { KUBECONFIG: kubeconfig });
    expect(exec.code).toBe(1);
    expect(exec.stderr).not.toContain("[object Object]");
    expect(exec.stderr).toMatch(
      /^harness: the API server refused an exec into pod harness-\S+ in namespace \S+ \(HTTP 403\): the kubeconfig's user may not create pods\/exec there: bind it a Role with create on pods\/exec/m,
    );
    const doctor = await cli(["doctor", "-w", ws.path], { KUBECONFIG: kubeconfig });
    expect(doctor.stdout).toMatch(/^fail rbac: the kubeconfig's user may not create pods\/exec in /m);
    rmSync(dir, { recursive: true, force: true });
  });
});
