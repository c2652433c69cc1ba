/**
 * `harness batch --engine kubernetes` end to end: the built CLI, the fake Messages API on loopback and
 * the cluster in HARNESS_TEST_KUBECONFIG. Every task runs in a pod of its own, and none is left
 * afterwards, after a finished batch and after Ctrl-C.
 */
import { existsSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { BatchSummary } from "../../src/batch/batch-summary.js";
import type { BatchResult } from "../../src/batch/results-file.js";
import { connectCluster } from "../../src/sandbox/kubernetes/api/kube-client.js";
import { listHarnessPods } from "../../src/sandbox/kubernetes/pod/pod-registry.js";
import { useFakeApi } from "../support/fake-api-fixture.js";
import { type RecordedRequest, textReply, toolUseReply } from "../support/fake-messages-api.js";
import { skipKubernetes, TEST_NAMESPACE, testKubeconfig } from "../support/kubernetes-available.js";
import { runCli, spawnCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";

const turnOf = (request: RecordedRequest) =>
  request.body.messages.filter((m) => m.role === "assistant").length;
const slow = (request: RecordedRequest) => JSON.stringify(request.body.messages[0]).includes("[slow]");

/** A task writes its pod's hostname and uid into the workspace's copy, then submits. */
function reply(request: RecordedRequest) {
  if (turnOf(request) > 0) return textReply("Done.");
  const command = slow(request) ? "sleep 3; echo ok > out.txt" : "echo $(id -u) > out.txt; cat /etc/hostname";
  return toolUseReply("bash", { command });
}

function makeBatch(n: number, task: string) {
  const root = makeWorkspace("harness-kbatch-");
  const workspaces = Array.from({ length: n }, () => makeWorkspace("harness-kbatch-ws-"));
  const lines = workspaces.map((ws, i) =>
    JSON.stringify({ id: `k${i}`, workspace: ws.path, task: `${task} ${i}` }),
  );
  const tasksPath = join(root.path, "tasks.jsonl");
  writeFileSync(tasksPath, `${lines.join("\n")}\n`);
  return {
    tasksPath,
    resultsPath: join(root.path, "tasks.results.jsonl"),
    workspaces: workspaces.map((ws) => realpathSync(ws.path)),
    [Symbol.dispose]() {
      for (const ws of workspaces) ws[Symbol.dispose]();
      root[Symbol.dispose]();
    },
  };
}

async function podsLeft(workspaces: string[]): Promise<number> {
  const cluster = connectCluster({ kubeconfig: testKubeconfig, namespace: TEST_NAMESPACE });
  let n = 0;
  for (const ws of workspaces) n += (await listHarnessPods(cluster, ws)).length;
  return n;
}

const results = (path: string) =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as BatchResult);

describe.skipIf(skipKubernetes)("harness batch --engine kubernetes", () => {
  const fake = useFakeApi();
  const serve = () => {
    for (let i = 0; i < 100; i += 1) fake.api.enqueue(reply);
  };
  const env = () => ({ ...fake.env, KUBECONFIG: testKubeconfig ?? "", HARNESS_ENGINE: "kubernetes" });

  it("8 tasks at concurrency 4: each in its own pod, results and copy-mode diffs, no pods left", async () => {
    using batch = makeBatch(8, "[fast] write it");
    serve();
    const run = await runCli(["batch", batch.tasksPath, "--concurrency", "4", "--output-format", "json"], {
      env: env(),
      timeoutMs: 300_000,
    });
    expect(run.code, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout) as BatchSummary;
    expect(summary).toMatchObject({ tasks: 8, finished: 8, passed: 8, failed: 0, exit_code: 0 });
    const lines = results(batch.resultsPath);
    expect(lines.map((r) => r.status)).toEqual(Array(8).fill("submitted"));
    // Copy isolation: the workspaces are untouched (the batch does not apply), each change saved as a diff.
    for (const ws of batch.workspaces) expect(existsSync(join(ws, "out.txt"))).toBe(false);
    const hostnames = new Set<string>();
    for (const r of lines) {
      const transcript = readFileSync(r.transcript_path ?? "", "utf8");
      const name = /harness-harness-kbatch-ws-[\w-]+/.exec(transcript)?.[0];
      expect(name, r.task_id).toBeDefined();
      hostnames.add(name ?? "");
    }
    expect(hostnames.size).toBe(8);
    expect(await podsLeft(batch.workspaces)).toBe(0);
  });

  it("the warm pool makes later tasks' pods ahead; their opens take them; none is left", async () => {
    using batch = makeBatch(6, "[fast] write it");
    serve();
    const run = await runCli(
      ["batch", batch.tasksPath, "--concurrency", "2", "--warm", "2", "--output-format", "json"],
      { env: { ...env(), DEBUG: "harness:kubernetes" }, timeoutMs: 300_000 },
    );
    expect(run.code, run.stderr).toBe(0);
    expect((JSON.parse(run.stdout) as BatchSummary).passed).toBe(6);
    // The first two start at once; the next ones' pods were made while those ran.
    expect((run.stderr.match(/taken from the warm pool/g) ?? []).length).toBeGreaterThanOrEqual(1);
    expect(await podsLeft(batch.workspaces)).toBe(0);
  });

  it("Ctrl-C mid-way leaves no pods", async () => {
    using batch = makeBatch(4, "[slow] write it");
    serve();
    const cli = spawnCli(["batch", batch.tasksPath, "--concurrency", "2"], {
      env: env(),
      timeoutMs: 120_000,
    });
    await expect
      .poll(() => podsLeft(batch.workspaces), { timeout: 60_000, interval: 200 })
      .toBeGreaterThan(0);
    cli.child.kill("SIGINT");
    const done = await cli.done;
    expect(done.code, done.stderr).toBe(130);
    expect(await podsLeft(batch.workspaces)).toBe(0);
  });
});
