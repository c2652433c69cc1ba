import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { percentiles, summarize } from "../../../src/batch/batch-summary.js";
import { type BatchResult, needsRun, ResultsWriter, readResults } from "../../../src/batch/results-file.js";
import { parseTasks } from "../../../src/batch/task-file.js";
import { planTasks } from "../../../src/batch/task-plan.js";
import { runPool } from "../../../src/batch/task-pool.js";

const env = { ANTHROPIC_API_KEY: "k", MODEL_ID: "claude-sonnet-4-6" };
let dir = "";
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = "";
});

describe("tasks file", () => {
  it("reads tasks with per-task settings and names the bad line", () => {
    const tasks = parseTasks(
      '{"id":"a","workspace":"ws","task":"x","maxTurns":3,"memory":"1g"}\n\n{"id":"b","workspace":"/w","task":"y"}\n',
      "/base",
    );
    expect(tasks.map((t) => [t.id, t.workspace, t.line])).toEqual([
      ["a", "/base/ws", 1],
      ["b", "/w", 3],
    ]);
    expect(tasks[0]?.flags).toEqual({ maxTurns: "3", memory: "1g" });
    expect(() => parseTasks('{"id":"a","workspace":"w","task":"x","maxTurn":3}', "/")).toThrow(
      /line 1: unknown setting 'maxTurn'/,
    );
    expect(() =>
      parseTasks('{"id":"a","workspace":"w","task":"x"}\n{"id":"a","workspace":"w","task":"x"}', "/"),
    ).toThrow(/line 2: id 'a' is used twice/);
    expect(() => parseTasks("{nope", "/")).toThrow(/line 1: not JSON/);
  });

  it("gives tasks sharing a workspace copy isolation, and refuses bind for them", () => {
    const tasks = parseTasks(
      [
        '{"id":"a","workspace":"/w1","task":"x"}',
        '{"id":"b","workspace":"/w1/","task":"y"}',
        '{"id":"c","workspace":"/w2","task":"z"}',
      ].join("\n"),
      "/",
    );
    const planned = planTasks(tasks, {}, env);
    expect(planned.map((p) => [p.task.id, p.sandboxConfig.isolation, p.sharedWorkspace])).toEqual([
      ["a", "copy", true],
      ["b", "copy", true],
      ["c", "bind", false],
    ]);
    expect(() => planTasks(tasks, { isolation: "bind" }, env)).toThrow(
      /task 'a' \(line 1\): isolation 'bind' on a workspace that task 'b' also uses/,
    );
    const badTurns = parseTasks('{"id":"a","workspace":"/w","task":"x","maxTurns":"many"}', "/");
    expect(() => planTasks(badTurns, {}, env)).toThrow(
      /task 'a' \(line 1\): --max-turns must be a positive whole number/,
    );
  });
});

function result(id: string, extra: Partial<BatchResult> = {}): BatchResult {
  return {
    type: "result",
    subtype: "success",
    is_error: false,
    status: "submitted",
    exit_code: 0,
    result: "",
    num_turns: 1,
    duration_ms: 100,
    duration_api_ms: 10,
    usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 },
    total_cost_usd: 0.001,
    model: "m",
    session_id: id,
    run_id: id,
    transcript_path: null,
    task_id: id,
    sandbox_start_ms: 50,
    ...extra,
  };
}

describe("results file and resume", () => {
  it("keeps the last line per task, skips a line cut off by a crash, and ends it before appending", () => {
    dir = mkdtempSync(join(tmpdir(), "harness-batch-unit-"));
    const path = join(dir, "r.jsonl");
    const writer = new ResultsWriter(path);
    writer.append(result("a", { status: "error", is_error: true, subtype: "error_during_execution" }));
    writer.append(result("a"));
    appendFileSync(path, '{"type":"result","task_id":"b"');
    const read = readResults(path);
    expect(read.unreadable).toBe(1);
    expect(read.byId.get("a")?.status).toBe("submitted");
    new ResultsWriter(path).append(result("c"));
    expect(readResults(path).byId.get("c")?.status).toBe("submitted");
  });

  it("runs again what was never recorded or canceled, and what --retry names", () => {
    const failed = result("x", { status: "step_limit", is_error: true });
    const crashed = result("y", { status: "error", is_error: true });
    expect(needsRun(undefined, "none")).toBe(true);
    expect(needsRun(result("z", { status: "canceled", is_error: true }), "none")).toBe(true);
    expect(needsRun(failed, "none")).toBe(false);
    expect(needsRun(failed, "failed")).toBe(true);
    expect(needsRun(failed, "errors")).toBe(false);
    expect(needsRun(crashed, "errors")).toBe(true);
    expect(needsRun(result("ok"), "failed")).toBe(false);
  });
});

describe("summary and pool", () => {
  it("counts passes, failures by reason, cost, percentiles and the exit code", () => {
    const results = new Map([
      ["a", result("a", { duration_ms: 100 })],
      [
        "b",
        result("b", {
          status: "refusal",
          is_error: true,
          subtype: "error_during_execution",
          duration_ms: 300,
        }),
      ],
      [
        "c",
        result("c", {
          status: "error",
          is_error: true,
          subtype: "error_during_execution",
          error: { name: "SandboxError", message: "gone" },
          duration_ms: 200,
        }),
      ],
    ]);
    const s = summarize({
      taskIds: ["a", "b", "c", "d"],
      results,
      durationMs: 1000,
      rateLimitPauses: 2,
      stoppedBy: "budget",
    });
    expect(s).toMatchObject({
      passed: 1,
      failed: 2,
      not_run: 1,
      failed_by_reason: { refusal: 1, "error:SandboxError": 1 },
      exit_code: 3,
    });
    expect(s.total_cost_usd).toBeCloseTo(0.003);
    expect(s.task_duration_ms).toEqual({ p50: 200, p95: 300, max: 300 });
    const all = summarize({
      taskIds: ["a", "b", "c"],
      results,
      durationMs: 1,
      rateLimitPauses: 0,
      stoppedBy: null,
    });
    expect(all.exit_code).toBe(1);
    expect(percentiles([])).toEqual({ p50: null, p95: null, max: null });
  });

  it("runs at most `concurrency` at once and stops starting when told", async () => {
    let running = 0;
    let most = 0;
    const ran: number[] = [];
    const controller = new AbortController();
    const outcome = await runPool({
      items: [1, 2, 3, 4, 5, 6],
      concurrency: 2,
      signal: controller.signal,
      mayStart: () => ran.length < 4,
      run: async (n) => {
        running += 1;
        most = Math.max(most, running);
        await new Promise((resolve) => setTimeout(resolve, 5));
        ran.push(n);
        running -= 1;
        if (n === 3) throw new Error("boom");
      },
      onCrash: (n) => ran.push(-n),
    });
    expect(most).toBe(2);
    expect(outcome.stoppedBy).toBe("budget");
    expect(ran).toContain(-3);
  });
});
