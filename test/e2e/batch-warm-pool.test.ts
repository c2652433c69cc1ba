/**
 * `harness batch`'s warm pool end to end (built CLI, fake Messages API on loopback, real Docker):
 * containers are made ahead of the tasks that will use them, and none is left behind when the batch
 * ends or is stopped by SIGINT/SIGTERM, while a container the batch did not make is left as it was.
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { LABEL_WARM_POOL, LABEL_WORKSPACE } from "../../src/sandbox/docker/container/labels.js";
import { skipDocker } from "../support/docker-available.js";
import { useFakeApi } from "../support/fake-api-fixture.js";
import { type RecordedRequest, textReply, toolUseReply } from "../support/fake-messages-api.js";
import { runCli, spawnCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";
import { removeWorkspaceContainers, workspaceContainers } from "../support/workspace-container.js";

const docker = new Docker();

/** Each task runs `sleep 2` once, then ends. */
const reply = (request: RecordedRequest) =>
  request.body.messages.some((m) => m.role === "assistant")
    ? textReply("Done.")
    : toolUseReply("bash", { command: "sleep 2" });

function makeBatch(n: number) {
  const root = makeWorkspace("harness-warm-");
  const workspaces = Array.from({ length: n }, (_, i) => makeWorkspace(`harness-warm-ws${i}-`).path);
  const lines = workspaces.map((ws, i) => JSON.stringify({ id: `w${i}`, workspace: ws, task: "sleep" }));
  const tasksPath = join(root.path, "tasks.jsonl");
  writeFileSync(tasksPath, `${lines.join("\n")}\n`);
  return {
    tasksPath,
    resultsPath: join(root.path, "tasks.results.jsonl"),
    workspaces,
    async [Symbol.asyncDispose]() {
      for (const ws of workspaces) await removeWorkspaceContainers(ws);
      root[Symbol.dispose]();
    },
  };
}

/** Containers of these workspaces that a warm pool made (labelled with it), by workspace. */
async function warmContainers(workspaces: string[]): Promise<string[]> {
  const found = await docker.listContainers({ all: true, filters: { label: [LABEL_WARM_POOL] } });
  return found.map((c) => c.Labels[LABEL_WORKSPACE] ?? "").filter((ws) => workspaces.includes(ws));
}

async function containersLeft(workspaces: string[]): Promise<number> {
  let n = 0;
  for (const ws of workspaces) n += (await workspaceContainers(ws)).length;
  return n;
}

const resultCount = (path: string) =>
  existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean).length : 0;

describe.skipIf(skipDocker)("harness batch: the warm pool", () => {
  const fake = useFakeApi();
  const serve = () => {
    for (let i = 0; i < 100; i += 1) fake.api.enqueue(reply);
  };

  it("makes the next tasks' containers ahead, each task takes its own, and nothing is left at the end", async () => {
    await using batch = makeBatch(6);
    serve();
    const cli = spawnCli(["batch", batch.tasksPath, "--concurrency", "2", "--warm", "2"], {
      env: fake.env,
      timeoutMs: 180_000,
    });
    // While w0 and w1 run, w2 and w3 (not started: no result yet) already have their containers.
    const later = batch.workspaces.slice(2);
    await expect.poll(() => warmContainers(later), { timeout: 60_000, interval: 100 }).not.toEqual([]);
    const run = await cli.done;
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/6 tasks · 6 passed · 0 failed/);
    const results = readFileSync(batch.resultsPath, "utf8").split("\n").filter(Boolean);
    expect(results.map((line) => JSON.parse(line).status)).toEqual(Array(6).fill("submitted"));
    expect(await containersLeft(batch.workspaces)).toBe(0);
  });

  it.each([
    ["SIGINT", 130],
    ["SIGTERM", 143],
  ] as const)(
    "%s while containers wait for their tasks: every one it made is removed, another's container stays (exit %d)",
    async (signal, code) => {
      await using batch = makeBatch(8);
      serve();
      // The last task's workspace has a container of its own (harness exec leaves it running).
      const last = batch.workspaces[7] as string;
      const exec = await runCli(["exec", "-w", last, "--", "true"], { timeoutMs: 60_000 });
      expect(exec.code, exec.stderr).toBe(0);
      const [before] = await workspaceContainers(last);
      const cli = spawnCli(["batch", batch.tasksPath, "--concurrency", "2", "--warm", "5"], {
        env: fake.env,
        timeoutMs: 180_000,
      });
      // Containers wait for tasks that have not started (w2…w6) when the signal comes.
      await expect
        .poll(() => warmContainers(batch.workspaces.slice(2, 7)), { timeout: 60_000, interval: 100 })
        .not.toEqual([]);
      expect(resultCount(batch.resultsPath)).toBeLessThan(8);
      cli.child.kill(signal);
      const stopped = await cli.done;
      expect(stopped.code, stopped.stderr).toBe(code);
      expect(resultCount(batch.resultsPath)).toBeLessThan(8);
      expect(await warmContainers(batch.workspaces)).toEqual([]);
      expect(await containersLeft(batch.workspaces.slice(0, 7))).toBe(0);
      // Found running, not made by the pool: left as it was (a task that runs would reuse it).
      expect(await workspaceContainers(last)).toEqual([before]);
    },
  );
});
