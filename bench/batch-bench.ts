/**
 * `harness batch` benchmark: 50 short tasks (5 bash calls each, then a final text) with an instant
 * scripted model, at concurrency 1, 2, 4 and 8, each with the warm pool off (`--warm 0`) and on (its
 * default size, the concurrency), through the batch command's own code (in-process, the model
 * injected). Reports tasks per minute, sandbox start p50/p95, host memory per running task (peak host
 * memory in use above the idle baseline, divided by the concurrency), and the harness containers left
 * afterwards (must be 0). Then what warm containers cost while they wait (warm-idle.ts).
 *   node --import tsx bench/batch-bench.ts   (env: BENCH_TASKS=50 BENCH_CONCURRENCY=1,2,4,8 BENCH_WARM=0,on)
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { freemem, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import type { BatchSummary } from "../src/batch/batch-summary.js";
import { batchCommand } from "../src/cli/run/batch-command.js";
import { Interrupts } from "../src/cli/session/interrupts.js";
import { SessionEnd } from "../src/cli/session/session-end.js";
import type { ModelClient, ModelResponse } from "../src/model/model-client.js";
import { makeWorkspace } from "../test/support/workspace.js";
import { workspaceContainers } from "../test/support/workspace-container.js";
import { envInt, formatTable } from "./stats.js";
import { measureWarmIdle } from "./warm-idle.js";

const TASKS = envInt("BENCH_TASKS", 50);
const LEVELS = (process.env["BENCH_CONCURRENCY"] ?? "1,2,4,8").split(",").map(Number);
/** "0": the warm pool off; "on": its default size (the concurrency). */
const WARM = (process.env["BENCH_WARM"] ?? "0,on").split(",");
const CALLS = 5;

const usage = { inputTokens: 100, outputTokens: 20, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };

/** Answers at once: CALLS bash calls, then "Done." (the turn is the number of assistant messages). */
const instantModel: ModelClient = {
  async complete(request): Promise<ModelResponse> {
    const turn = request.messages.filter((m) => m.role === "assistant").length;
    const content: ModelResponse["content"] =
      turn < CALLS
        ? [
            {
              type: "tool_use",
              id: `toolu_${turn}`,
              name: "bash",
              input: { command: `echo step ${turn}` },
              caller: undefined,
            } as never,
          ]
        : [{ type: "text", text: "Done.", citations: null }];
    return {
      id: `msg_${turn}`,
      model: "bench",
      content,
      stopReason: turn < CALLS ? "tool_use" : "end_turn",
      usage,
    };
  },
};

const sink = () => new Writable({ write: (_c, _e, done) => done() });

async function runLevel(concurrency: number, warm: string): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), "harness-batch-bench-"));
  const workspaces = Array.from({ length: TASKS }, () => makeWorkspace("harness-batch-bench-ws-"));
  try {
    const lines = workspaces.map((ws, i) =>
      JSON.stringify({ id: `b${i}`, workspace: ws.path, task: "bench" }),
    );
    const tasksPath = join(dir, "tasks.jsonl");
    writeFileSync(tasksPath, `${lines.join("\n")}\n`);
    const baseline = totalmem() - freemem();
    let peak = baseline;
    const sampler = setInterval(() => {
      peak = Math.max(peak, totalmem() - freemem());
    }, 100);
    let out = "";
    const stdout = new Writable({
      write: (chunk, _e, done) => {
        out += String(chunk);
        done();
      },
    });
    const started = performance.now();
    const code = await batchCommand(
      tasksPath,
      { concurrency: String(concurrency), outputFormat: "json", ...(warm === "on" ? {} : { warm }) },
      new Interrupts(new SessionEnd({ exit: () => {}, say: () => {} }), sink(), false),
      {
        createModel: async () => instantModel,
        // No Models API to ask: the table and harness's own tools, as for an endpoint without it.
        describeModel: async () => undefined,
        stdout,
        stderr: sink(),
        env: {
          ...process.env,
          ANTHROPIC_API_KEY: "bench",
          MODEL_ID: "claude-sonnet-4-6",
          XDG_STATE_HOME: dir,
        },
      },
    );
    const wallMs = performance.now() - started;
    clearInterval(sampler);
    const summary = JSON.parse(out) as BatchSummary;
    let left = 0;
    for (const ws of workspaces) left += (await workspaceContainers(ws.path)).length;
    if (code !== 0 || summary.passed !== TASKS) throw new Error(`batch exit ${code}: ${out}`);
    const perTaskMiB = (peak - baseline) / Math.min(concurrency, TASKS) / 1024 ** 2;
    return [
      String(concurrency),
      warm === "on" ? String(concurrency) : warm,
      ((TASKS / wallMs) * 60_000).toFixed(1),
      `${summary.sandbox_start_ms.p50} / ${summary.sandbox_start_ms.p95}`,
      `${summary.task_duration_ms.p50} / ${summary.task_duration_ms.p95}`,
      perTaskMiB.toFixed(0),
      String(left),
    ];
  } finally {
    for (const ws of workspaces) ws[Symbol.dispose]();
    rmSync(dir, { recursive: true, force: true });
  }
}

const rows: string[][] = [];
for (const level of LEVELS) for (const warm of WARM) rows.push(await runLevel(level, warm));
process.stdout.write(
  `${TASKS} tasks of ${CALLS} bash calls, instant model\n\n${formatTable(
    [
      "concurrency",
      "warm pool",
      "tasks/min",
      "sandbox start p50/p95 ms",
      "task p50/p95 ms",
      "host MiB per running task",
      "containers left",
    ],
    rows,
  )}\n`,
);
process.stdout.write(`\n${await measureWarmIdle(Math.max(...LEVELS))}\n`);
