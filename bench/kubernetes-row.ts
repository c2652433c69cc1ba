/**
 * The Kubernetes row of `npm run bench:engines`: on the cluster in HARNESS_TEST_KUBECONFIG (or
 * KUBECONFIG), pod create → first command result (open of a KubernetesSandbox, whose pod, setup,
 * executor and copy-in come first, then `exec("true")`), and per call the executor against a bare exec
 * of `true` through the API (a WebSocket, kubelet, the runtime), interleaved in the same pod.
 */
import { chownSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { VersionApi } from "@kubernetes/client-node";
import { connectCluster } from "../src/sandbox/kubernetes/api/kube-client.js";
import { runInPod } from "../src/sandbox/kubernetes/api/pod-command.js";
import { KubernetesSandbox } from "../src/sandbox/kubernetes/kubernetes-sandbox.js";
import { SANDBOX_CONTAINER } from "../src/sandbox/kubernetes/pod/pod-spec.js";
import { type Summary, summarize } from "./stats.js";

export interface KubernetesResult {
  engine: string;
  version: string;
  /** open() → the first `exec("true")` result, each on a new pod. */
  createToFirst: Summary;
  /** stop(): the executor closed, the pod deleted. */
  stop: Summary;
  harness: Summary;
  bare: Summary;
}

export async function measureKubernetes(
  kubeconfig: string,
  options: { iterations: number; warmup: number; pods: number },
): Promise<KubernetesResult> {
  const cluster = connectCluster({ kubeconfig });
  const version = (await cluster.kc.makeApiClient(VersionApi).getCode()).gitVersion;
  const workspace = realpathSync(mkdtempSync(join(tmpdir(), "harness-k8s-bench-")));
  if (process.getuid?.() === 0) chownSync(workspace, 1000, 1000);
  try {
    const firsts: number[] = [];
    const stops: number[] = [];
    let kept: KubernetesSandbox | undefined;
    for (let i = 0; i < options.pods; i++) {
      const started = performance.now();
      const sandbox = await KubernetesSandbox.open({ workspace, kubeconfig });
      const first = await sandbox.exec("true");
      if (first.exitCode !== 0) throw new Error(`kubernetes: true exited ${first.exitCode}: ${first.stderr}`);
      firsts.push(performance.now() - started);
      if (i < options.pods - 1) {
        const stopping = performance.now();
        await sandbox.stop();
        stops.push(performance.now() - stopping);
      } else kept = sandbox;
    }
    const sandbox = kept as KubernetesSandbox;
    const target = {
      kc: cluster.kc,
      namespace: sandbox.namespace,
      pod: sandbox.podName,
      container: SANDBOX_CONTAINER,
    };
    const harness: number[] = [];
    const bare: number[] = [];
    const calls = [
      async () => {
        const r = await sandbox.exec("true");
        if (r.exitCode !== 0) throw new Error(`kubernetes: harness true exited ${r.exitCode}`);
      },
      async () => {
        const r = await runInPod(target, ["true"], { deadlineMs: 30_000 });
        if (r.exitCode !== 0) throw new Error(`kubernetes: bare true exited ${r.exitCode}: ${r.error}`);
      },
    ] as const;
    for (let i = 0; i < options.warmup; i++) for (const call of calls) await call();
    for (let round = 0; round < options.iterations; round++) {
      for (const k of round % 2 === 0 ? [0, 1] : [1, 0]) {
        const started = performance.now();
        await calls[k as 0 | 1]();
        (k === 0 ? harness : bare).push(performance.now() - started);
      }
    }
    const stopping = performance.now();
    await sandbox.stop();
    stops.push(performance.now() - stopping);
    return {
      engine: "Kubernetes (pod per sandbox)",
      version,
      createToFirst: summarize(firsts),
      stop: summarize(stops),
      harness: summarize(harness),
      bare: summarize(bare),
    };
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}
