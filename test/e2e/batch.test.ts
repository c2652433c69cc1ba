/**
 * `harness batch` end to end: the built CLI, the fake Messages API on loopback and real Docker.
 * Every task's replies come from one dispatcher that reads the task's marker ("[kind:id]") from the
 * first message and the turn from the number of assistant messages, so tasks can interleave freely.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import type { BatchSummary } from "../../src/batch/batch-summary.js";
import type { BatchResult } from "../../src/batch/results-file.js";
import { skipDocker } from "../support/docker-available.js";
import { useFakeApi } from "../support/fake-api-fixture.js";
import {
  type FakeReply,
  httpError,
  type RecordedRequest,
  textReply,
  toolUseReply,
} from "../support/fake-messages-api.js";
import { runCli, spawnCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";
import { removeWorkspaceContainers, workspaceContainers } from "../support/workspace-container.js";

type Kind = "success" | "steps" | "timeout" | "apierror" | "refusal" | "slow" | "storm" | "calm";

function markerOf(request: RecordedRequest): { kind: Kind; id: string } {
  const match = /\[(\w+):([\w-]+)\]/.exec(JSON.stringify(request.body.messages[0]));
  if (!match) throw new Error("a request without a task marker");
  return { kind: match[1] as Kind, id: match[2] as string };
}

const turnOf = (request: RecordedRequest) =>
  request.body.messages.filter((m) => m.role === "assistant").length;

/** The replies of each kind of task. */
/** The storm task's one 429: whether it was sent, and a promise settled once it was. */
interface Storm {
  sent: boolean;
  refused: Promise<void>;
  refuse: () => void;
}

function dispatch(request: RecordedRequest, storm: Storm): FakeReply | Promise<FakeReply> {
  const { kind } = markerOf(request);
  const turn = turnOf(request);
  switch (kind) {
    case "success":
      return turn === 0 ? toolUseReply("bash", { command: "echo ok > out.txt" }) : textReply("Done.");
    case "steps":
      return toolUseReply("bash", { command: "true" });
    case "timeout":
      return turn === 0 ? toolUseReply("bash", { command: "sleep 30" }) : textReply("It timed out.");
    case "apierror":
      return httpError(500);
    case "refusal":
      return textReply("I can't help with that.", { stopReason: "refusal" });
    case "slow":
      return turn === 0 ? toolUseReply("bash", { command: "sleep 2" }) : textReply("Done.");
    case "storm":
      if (!storm.sent) {
        storm.sent = true;
        storm.refuse();
        return httpError(429, { retryAfterMs: 3000 });
      }
      return turn === 0 ? toolUseReply("bash", { command: "true" }) : textReply("Done.");
    case "calm":
      // The first answer only once the storm task was refused, and a second later (the CLI has read the
      // 429 by then): this task's next request falls inside the 3 s pause, whichever sandbox opened first.
      return turn === 0
        ? storm.refused.then(() => sleep(1000)).then(() => toolUseReply("bash", { command: "true" }))
        : textReply("Done.");
  }
}

interface Batch {
  dir: string;
  tasksPath: string;
  resultsPath: string;
  workspaces: string[];
  /** The workspace of a task (by the task's id, or the name it shares). */
  workspaceOf(name: string): string;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A tasks file in a scratch directory; workspaces are made (or shared) as `tasks` says. */
function makeBatch(tasks: Array<{ id: string; kind: Kind; workspace?: string; extra?: object }>): Batch {
  const root = makeWorkspace("harness-batch-");
  const workspaces = new Map<string, string>();
  const lines = tasks.map((t) => {
    const name = t.workspace ?? t.id;
    if (!workspaces.has(name)) {
      const ws = makeWorkspace(`harness-batch-ws-${name}-`);
      workspaces.set(name, ws.path);
    }
    return JSON.stringify({
      id: t.id,
      workspace: workspaces.get(name),
      task: `[${t.kind}:${t.id}] do it`,
      ...t.extra,
    });
  });
  const tasksPath = join(root.path, "tasks.jsonl");
  writeFileSync(tasksPath, `${lines.join("\n")}\n`);
  return {
    dir: root.path,
    tasksPath,
    resultsPath: join(root.path, "tasks.results.jsonl"),
    workspaces: [...workspaces.values()],
    workspaceOf: (name) => workspaces.get(name) ?? "",
    async [Symbol.asyncDispose]() {
      for (const ws of workspaces.values()) await removeWorkspaceContainers(ws);
      root[Symbol.dispose]();
    },
  };
}

function readResultLines(path: string): BatchResult[] {
  return readFileSync(path, "utf8")
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => JSON.parse(line) as BatchResult);
}

const lastById = (results: BatchResult[]) => new Map(results.map((r) => [r.task_id, r]));

async function containersLeft(workspaces: string[]): Promise<number> {
  let n = 0;
  for (const ws of workspaces) n += (await workspaceContainers(ws)).length;
  return n;
}

describe.skipIf(skipDocker)("harness batch", () => {
  const fake = useFakeApi();
  const serve = () => {
    let refuse = () => {};
    const refused = new Promise<void>((resolve) => {
      refuse = resolve;
    });
    const storm: Storm = { sent: false, refused, refuse };
    for (let i = 0; i < 400; i += 1) fake.api.enqueue((request) => dispatch(request, storm));
  };

  it("20 tasks at concurrency 4 with mixed outcomes: results, summary, exit code, no containers left", async () => {
    const kinds: Kind[] = ["success", "steps", "timeout", "apierror", "refusal"];
    const tasks = Array.from({ length: 20 }, (_, i) => {
      const kind = kinds[i % kinds.length] as Kind;
      const extra = kind === "steps" ? { maxTurns: 1 } : kind === "timeout" ? { timeout: 1 } : {};
      // t00 and t05 share a workspace: each gets copy isolation.
      return { id: `t${String(i).padStart(2, "0")}`, kind, extra, ...(i === 5 ? { workspace: "t00" } : {}) };
    });
    await using batch = makeBatch(tasks);
    serve();
    const run = await runCli(["batch", batch.tasksPath, "--concurrency", "4", "--output-format", "json"], {
      env: fake.env,
      timeoutMs: 240_000,
    });
    // An API error after retries is a task that did not finish: exit 1.
    expect(run.code, run.stderr).toBe(1);
    const summary = JSON.parse(run.stdout) as BatchSummary;
    expect(summary).toMatchObject({
      type: "batch_summary",
      tasks: 20,
      finished: 20,
      passed: 8,
      failed: 12,
      failed_by_reason: { step_limit: 4, refusal: 4, "error:ModelError": 4 },
      not_run: 0,
      exit_code: 1,
    });
    expect(summary.task_duration_ms.p50).toBeGreaterThan(0);
    expect(summary.sandbox_start_ms.p95).toBeGreaterThan(0);
    expect(summary.usage.output_tokens).toBeGreaterThan(0);

    const lines = readResultLines(batch.resultsPath);
    expect(lines).toHaveLength(20);
    const byId = lastById(lines);
    for (const task of tasks) {
      const result = byId.get(task.id);
      expect(result, task.id).toBeDefined();
      const expected = {
        success: "submitted",
        timeout: "submitted",
        steps: "step_limit",
        apierror: "error",
        refusal: "refusal",
      }[task.kind as "success"];
      expect(result?.status, task.id).toBe(expected);
      expect(result?.type).toBe("result");
      if (task.kind === "apierror") {
        expect(result?.error).toMatchObject({ name: "ModelError", status: 500 });
        expect(result?.error?.message).toMatch(/after 4 retries/);
      }
      expect(result?.transcript_path === null || existsSync(result?.transcript_path ?? "")).toBe(true);
    }
    // 1 request + 4 retries per API-error task, no SDK retries on top.
    const apiErrorRequests = fake.api.requests.filter((r) => markerOf(r).kind === "apierror");
    expect(apiErrorRequests).toHaveLength(4 * 5);
    // The timed-out command is in its task's transcript.
    const timeoutTranscript = readFileSync(byId.get("t02")?.transcript_path ?? "", "utf8");
    expect(timeoutTranscript).toMatch(/"timedOut":true/);
    // The shared workspace was never written: both tasks worked on copies, their changes saved as diffs.
    const shared = batch.workspaceOf("t00");
    expect(existsSync(join(shared, "out.txt"))).toBe(false);
    const transcripts = readdirSync(join(batch.dir, "tasks.results.transcripts"));
    expect(transcripts).toEqual(expect.arrayContaining(["t00.diff", "t05.diff", "t10.jsonl"]));
    expect(existsSync(join(batch.workspaceOf("t10"), "out.txt"))).toBe(true);
    expect(await containersLeft(batch.workspaces)).toBe(0);
  });

  it("Ctrl-C mid-way leaves valid results and no containers; the same command resumes to the end", async () => {
    const tasks = Array.from({ length: 6 }, (_, i) => ({ id: `s${i}`, kind: "slow" as Kind }));
    await using batch = makeBatch(tasks);
    serve();
    const args = ["batch", batch.tasksPath, "--concurrency", "2"];
    const cli = spawnCli(args, { env: fake.env, timeoutMs: 120_000 });
    await expect
      .poll(() => (existsSync(batch.resultsPath) ? readResultLines(batch.resultsPath).length : 0), {
        timeout: 60_000,
        interval: 100,
      })
      .toBeGreaterThanOrEqual(1);
    cli.child.kill("SIGINT");
    const first = await cli.done;
    expect(first.code, first.stderr).toBe(130);
    expect(first.stdout).toMatch(/interrupted: run the same command again to finish/);
    const afterStop = readResultLines(batch.resultsPath);
    const finished = afterStop.filter((r) => r.status === "submitted").map((r) => r.task_id);
    expect(finished.length).toBeGreaterThanOrEqual(1);
    expect(finished.length).toBeLessThan(6);
    expect(await containersLeft(batch.workspaces)).toBe(0);

    const requestsBefore = fake.api.requests.length;
    const second = await runCli(args, { env: fake.env, timeoutMs: 120_000 });
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toMatch(/6 tasks · 6 passed · 0 failed/);
    const final = lastById(readResultLines(batch.resultsPath));
    expect([...final.values()].every((r) => r.status === "submitted")).toBe(true);
    expect(final.size).toBe(6);
    // Finished tasks were skipped: none of them asked the model again.
    const resumed = fake.api.requests.slice(requestsBefore).map((r) => markerOf(r).id);
    for (const id of finished) expect(resumed).not.toContain(id);
    expect(await containersLeft(batch.workspaces)).toBe(0);
  });

  it("a 429 to one task holds every task: no task asks again before the retry-after has passed", async () => {
    const tasks = [
      { id: "storm", kind: "storm" as Kind },
      ...Array.from({ length: 3 }, (_, i) => ({ id: `calm${i}`, kind: "calm" as Kind })),
    ];
    await using batch = makeBatch(tasks);
    serve();
    const run = await runCli(["batch", batch.tasksPath, "--concurrency", "4", "--output-format", "json"], {
      env: fake.env,
    });
    expect(run.code, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout) as BatchSummary;
    expect(summary.passed).toBe(4);
    expect(summary.rate_limit_pauses).toBe(1);
    const order = fake.api.requests.map((r) => ({
      ...markerOf(r),
      turn: turnOf(r),
      status: r.status,
      at: r.receivedAt,
    }));
    const refused = order.findIndex((r) => r.status === 429);
    const retried = order.findIndex((r, i) => i > refused && r.id === "storm");
    expect(refused).toBeGreaterThanOrEqual(0);
    expect(retried).toBeGreaterThan(refused);
    // Every calm task's second request waited out the shared pause (the 429's 3 s retry-after), though
    // its first answer came 1 s after the 429: load can only make it later, never earlier. Released
    // together with the storm's retry, the calm requests may reach the API in either order.
    const refusedAt = order[refused]?.at ?? 0;
    const calmSecond = order.filter((r) => r.kind === "calm" && r.turn === 1);
    expect(calmSecond).toHaveLength(3);
    for (const request of calmSecond) expect(request.at - refusedAt).toBeGreaterThanOrEqual(2_900);
    expect((order[retried]?.at ?? 0) - refusedAt).toBeGreaterThanOrEqual(2_900);
    expect(order.filter((r) => r.status === 429)).toHaveLength(1);
  });
});
