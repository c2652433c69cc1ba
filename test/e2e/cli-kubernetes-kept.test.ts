/**
 * The CLI's kept pod on Kubernetes (issue 33): `harness exec --engine kubernetes` leaves its pod for
 * the workspace's next session, which finds it, resets it and copies the workspace in as it is now;
 * another config makes a new pod; a second session at the same time gets a pod of its own; a dead
 * session's pod and one changed in place are deleted, never used; one idle too long is deleted by
 * the next open; `harness rm` removes the kept one.
 */
import { chownSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { V1Pod } from "@kubernetes/client-node";
import { afterEach, describe, expect, it } from "vitest";
import { connectCluster } from "../../src/sandbox/kubernetes/api/kube-client.js";
import {
  ANNOTATION_IDLE_SINCE,
  KEPT_IDLE_MS,
  LABEL_KEPT,
} from "../../src/sandbox/kubernetes/pod/kept-pod.js";
import { quantity } from "../../src/sandbox/kubernetes/pod/pod-hardening.js";
import { deletePod } from "../../src/sandbox/kubernetes/pod/pod-lifecycle.js";
import { LABEL_WORKSPACE_HASH, workspaceHash } from "../../src/sandbox/kubernetes/pod/pod-spec.js";
import { skipKubernetes, TEST_NAMESPACE, testKubeconfig } from "../support/kubernetes-available.js";
import { runCli, spawnCli } from "../support/run-cli.js";
import { makeWorkspace, TEST_GID, TEST_UID } from "../support/workspace.js";

const env = () => ({ KUBECONFIG: testKubeconfig ?? "", HARNESS_NAMESPACE: TEST_NAMESPACE });

function writeHostFile(dir: string, name: string, text: string): void {
  writeFileSync(join(dir, name), text);
  if (process.getuid?.() === 0) chownSync(join(dir, name), TEST_UID, TEST_GID);
}

/** The workspace's pods that are not on their way out. */
async function podsOf(workspace: string): Promise<V1Pod[]> {
  const cluster = connectCluster({ kubeconfig: testKubeconfig, namespace: TEST_NAMESPACE });
  const list = await cluster.core.listNamespacedPod({
    namespace: TEST_NAMESPACE,
    labelSelector: `${LABEL_WORKSPACE_HASH}=${workspaceHash(realpathSync(workspace))}`,
  });
  return list.items.filter((pod) => !pod.metadata?.deletionTimestamp);
}

/** Changes a pod as `kubectl edit` would, read again when kubelet wrote its status meanwhile. */
async function editPod(name: string, change: (pod: V1Pod) => void): Promise<void> {
  const cluster = connectCluster({ kubeconfig: testKubeconfig, namespace: TEST_NAMESPACE });
  for (let attempt = 0; ; attempt++) {
    const pod = await cluster.core.readNamespacedPod({ name, namespace: TEST_NAMESPACE });
    change(pod);
    try {
      await cluster.core.replaceNamespacedPod({ name, namespace: TEST_NAMESPACE, body: pod });
      return;
    } catch (error) {
      if ((error as { code?: number }).code !== 409 || attempt >= 5) throw error;
    }
  }
}

const exec = (workspace: string, command: string, extra: string[] = []) =>
  runCli(["exec", "--engine", "kubernetes", "-w", workspace, ...extra, "--", command], { env: env() });

/** Every process's command line in the pod, from /proc (the image has no ps). */
const PROCESSES = "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done";

describe.skipIf(skipKubernetes)("the CLI's kept pod on --engine kubernetes", { timeout: 240_000 }, () => {
  const workspaces: string[] = [];
  // The workspaces are gone by now (`using`): their pods are found by the hash of their real path.
  afterEach(async () => {
    const cluster = connectCluster({ kubeconfig: testKubeconfig, namespace: TEST_NAMESPACE });
    for (const path of workspaces.splice(0)) {
      const list = await cluster.core.listNamespacedPod({
        namespace: TEST_NAMESPACE,
        labelSelector: `${LABEL_WORKSPACE_HASH}=${workspaceHash(path)}`,
      });
      for (const pod of list.items) await deletePod(cluster, pod.metadata?.name ?? "");
    }
  });
  /** A workspace whose pods the test removes at its end. */
  const workspace = () => {
    const ws = makeWorkspace();
    workspaces.push(realpathSync(ws.path));
    return ws;
  };

  it("a second exec reuses the pod, sees the host's files as they are now and nothing of the first session", async () => {
    using ws = workspace();
    writeHostFile(ws.path, "in.txt", "first\n");
    const first = await exec(
      ws.path,
      `cat in.txt; echo unapplied > made.txt; echo scratch > /tmp/scratch; echo dot > ~/.dot; (setsid sleep 43$((20 + 1)) >/dev/null 2>&1 &); sleep 1; ${PROCESSES} | grep -c 'sleep 432[1]'`,
    );
    expect(first.code, first.stderr).toBe(0);
    // The sleep outlives the command: only the end of the session ends it.
    expect(first.stdout).toBe("first\n1\n");
    expect(first.stderr).toMatch(/A made\.txt/);
    const [kept] = await podsOf(ws.path);
    expect(kept?.metadata?.labels?.[LABEL_KEPT]).toBe("true");
    expect(kept?.metadata?.annotations?.[ANNOTATION_IDLE_SINCE]).toBeDefined();
    const ps = await runCli(["ps", "--engine", "kubernetes"], { env: env() });
    expect(ps.stdout).toMatch(new RegExp(`^${kept?.metadata?.name}\\s+Running, kept, idle \\d+ min`, "m"));

    writeHostFile(ws.path, "in.txt", "changed on the host\n");
    const second = await exec(
      ws.path,
      `cat in.txt; ls -A made.txt /tmp/scratch ~/.dot 2>&1 | grep -c 'No such file'; ${PROCESSES} | grep -c 'sleep 432[1]' || true`,
    );
    expect(second.code, second.stderr).toBe(0);
    // The host's file as it is now; neither made.txt nor the scratch files nor the sleep.
    expect(second.stdout).toBe("changed on the host\n3\n0\n");
    const after = await podsOf(ws.path);
    expect(after.map((pod) => pod.metadata?.uid)).toEqual([kept?.metadata?.uid]);
  });

  it("another config makes a new pod and deletes the old; harness rm removes the kept pod", async () => {
    using ws = workspace();
    expect((await exec(ws.path, "true")).code).toBe(0);
    const [before] = await podsOf(ws.path);
    const other = await exec(ws.path, "true", ["--memory", "300m"]);
    expect(other.code, other.stderr).toBe(0);
    const now = await podsOf(ws.path);
    expect(now).toHaveLength(1);
    expect(now[0]?.metadata?.uid).not.toBe(before?.metadata?.uid);
    expect(quantity(now[0]?.spec?.containers[0]?.resources?.limits?.["memory"])).toBe(300 * 1024 ** 2);

    const rm = await runCli(["rm", "--engine", "kubernetes", "-w", ws.path], { env: env() });
    expect(rm.code, rm.stderr).toBe(0);
    expect(rm.stdout).toContain(`removed pod ${TEST_NAMESPACE}/${now[0]?.metadata?.name}`);
    expect(await podsOf(ws.path)).toEqual([]);
  });

  it("a session while another holds the pod gets a pod of its own, deleted at its end", async () => {
    using ws = workspace();
    const holding = spawnCli(
      ["exec", "--engine", "kubernetes", "-w", ws.path, "--", "echo holding; sleep 20; echo held > held.txt"],
      { env: env() },
    );
    await holding.waitForStdout(/holding/, 120_000);
    const [held] = await podsOf(ws.path);
    const second = await exec(ws.path, "test ! -e held.txt && echo own pod");
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toBe("own pod\n");
    expect(second.stderr).toMatch(
      /kept pod is in use by another session \(pid \d+\): this session gets a pod of its own/,
    );
    const first = await holding.done;
    expect(first.code, first.stderr).toBe(0);
    const left = await podsOf(ws.path);
    expect(left.map((pod) => pod.metadata?.uid)).toEqual([held?.metadata?.uid]);
  });

  it("a kept pod whose session died (kill -9) is deleted by the next open, never used", async () => {
    using ws = workspace();
    const dying = spawnCli(
      [
        "exec",
        "--engine",
        "kubernetes",
        "-w",
        ws.path,
        "--",
        "echo unapplied > left.txt; echo holding; sleep 60",
      ],
      { env: env() },
    );
    await dying.waitForStdout(/holding/, 120_000);
    const [held] = await podsOf(ws.path);
    dying.child.kill("SIGKILL");
    await dying.done;
    const next = await exec(ws.path, "test ! -e left.txt && echo clean");
    expect(next.code, next.stderr).toBe(0);
    expect(next.stdout).toBe("clean\n");
    const now = await podsOf(ws.path);
    expect(now).toHaveLength(1);
    expect(now[0]?.metadata?.uid).not.toBe(held?.metadata?.uid);
  });

  it("a kept pod idle past the timeout is deleted by the next open on the namespace, of any workspace", async () => {
    using ws = workspace();
    using other = workspace();
    expect((await exec(ws.path, "true")).code).toBe(0);
    const [kept] = await podsOf(ws.path);
    const idleSince = new Date(Date.now() - KEPT_IDLE_MS - 60_000).toISOString();
    await editPod(kept?.metadata?.name ?? "", (pod) => {
      pod.metadata = {
        ...pod.metadata,
        annotations: { ...pod.metadata?.annotations, [ANNOTATION_IDLE_SINCE]: idleSince },
      };
    });
    expect((await exec(other.path, "true")).code).toBe(0);
    expect(await podsOf(ws.path)).toEqual([]);
  });

  it("a kept pod changed in place (its image) is not used: deleted, and a new one made", async () => {
    using ws = workspace();
    expect((await exec(ws.path, "true")).code).toBe(0);
    const [kept] = await podsOf(ws.path);
    const name = kept?.metadata?.name ?? "";
    await editPod(name, (pod) => {
      const container = pod.spec?.containers[0];
      if (container === undefined) throw new Error("the pod has no container");
      container.image = "harness-test-not-an-image:1";
    });
    const next = await exec(ws.path, "echo fresh");
    expect(next.code, next.stderr).toBe(0);
    expect(next.stdout).toBe("fresh\n");
    expect(next.stderr).toMatch(new RegExp(`kept pod ${name} was not used and is deleted: `));
    const now = await podsOf(ws.path);
    expect(now).toHaveLength(1);
    expect(now[0]?.metadata?.uid).not.toBe(kept?.metadata?.uid);
  });
});
