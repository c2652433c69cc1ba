/**
 * Context benchmark: a 200-step task (each step prints 6 KB) under a 200k-token window, through the
 * real loop and Anthropic client against the fake Messages API (which counts tokens at 3 characters
 * each and refuses a request over the window as the API does), the sandbox faked: no Docker needed.
 * Three ways: the API's compaction (server), harness's own clearing and summaries (client), and none
 * (where it stops). For each: steps done, tokens sent per step (the fake's count of each request's
 * input), the largest request, the whole input sent, what was compacted, cleared or summarized, and
 * the time a compaction adds: a step with one against the steps without (the fake answers at once,
 * so this is harness's own cost; the API's summarization time is not measurable here).
 *   node --import tsx bench/context-bench.ts   (env: BENCH_STEPS=200 BENCH_WINDOW=200000 BENCH_STEP_BYTES=6144)
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ContextEdit } from "../src/agent/context/context-edits.js";
import { chooseStrategy } from "../src/agent/context/context-manager.js";
import { type ContextStrategy, runAgent } from "../src/agent/loop.js";
import { AnthropicModelClient } from "../src/model/anthropic-model-client.js";
import { createBashTool } from "../src/tools/bash-tool.js";
import { createEditorTool } from "../src/tools/editor/editor-tool.js";
import { OutputStore } from "../src/tools/output-store.js";
import { createReadOutputTool } from "../src/tools/read-output-tool.js";
import { startFakeMessagesApi } from "../test/support/fake-messages-api.js";
import { FakeSandbox } from "../test/support/fake-sandbox.js";
import { scriptLongTask, windowFacts } from "../test/support/long-task.js";
import { envInt, formatTable, ms, summarize } from "./stats.js";

const STEPS = envInt("BENCH_STEPS", 200);
const WINDOW = envInt("BENCH_WINDOW", 200_000);
const STEP_BYTES = envInt("BENCH_STEP_BYTES", 6 * 1024);
const MAX_TOKENS = 8000;
const KEY = "sk-ant-bench";
const MODEL = "claude-bench";

interface Outcome {
  name: string;
  status: string;
  steps: number;
  requests: number;
  inputs: number[];
  largest: number;
  edits: ContextEdit[];
  summaries: number;
  /** Wall time of each model call and the tools after it, and whether it began with a context edit. */
  stepTimes: { ms: number; edited: boolean }[];
  totalMs: number;
}

async function run(
  name: string,
  strategy: ContextStrategy | undefined,
  compaction: boolean,
): Promise<Outcome> {
  const api = await startFakeMessagesApi({
    apiKey: KEY,
    catalog: { [MODEL]: { contextWindow: WINDOW, compaction } },
  });
  const dir = mkdtempSync(join(tmpdir(), "harness-context-bench-"));
  try {
    const output = `${"x".repeat(63)}\n`.repeat(Math.ceil(STEP_BYTES / 64));
    const sandbox = new FakeSandbox(() => ({ stdout: output }));
    const store = new OutputStore({ dir: join(dir, "outputs") });
    const script = scriptLongTask(api, { steps: STEPS });
    const edits: ContextEdit[] = [];
    const stepTimes: Outcome["stepTimes"] = [];
    let last = performance.now();
    let edited = false;
    const started = last;
    const result = await runAgent(`Run the ${STEPS} steps.`, {
      model: new AnthropicModelClient({ apiKey: KEY, baseURL: api.url, model: MODEL, maxRetries: 0 }),
      tools: [
        createBashTool(sandbox, { timeoutMs: 5000, outputStore: store, anthropic: true }),
        createEditorTool(sandbox, { timeoutMs: 5000 }),
        createReadOutputTool(store),
      ],
      system: "You are a coding agent.",
      limits: { maxTurns: STEPS * 2, maxTokens: MAX_TOKENS },
      events: {
        onContextEdit: (edit) => {
          edits.push(edit);
          // A server compaction is reported after its response: it belongs to the step just timed.
          if (edit.kind === "compaction") {
            const lastStep = stepTimes.at(-1);
            if (lastStep !== undefined) lastStep.edited = true;
          } else edited = true;
        },
        onAssistantTurn: () => {
          const now = performance.now();
          stepTimes.push({ ms: now - last, edited });
          last = now;
          edited = false;
        },
      },
      ...(strategy === undefined
        ? {}
        : { context: { window: WINDOW, strategy, saveCleared: (text) => store.saveText(text)?.id } }),
    });
    const facts = windowFacts(api);
    const inputs = api.requests
      .filter((r) => r.status === 200 && r.inputTokens !== undefined)
      .map((r) => r.inputTokens ?? 0);
    return {
      name,
      status: result.status,
      steps: script.stepsAsked,
      requests: api.requests.length,
      inputs,
      largest: facts.largestInput,
      edits,
      summaries: script.summaries,
      stepTimes,
      totalMs: performance.now() - started,
    };
  } finally {
    await api.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const n = (x: number) => Math.round(x).toLocaleString("en-US");
// What `auto` picks for a model with compaction: the server's, unless the window is too small for its trigger.
const onCompacting = chooseStrategy("auto", true, WINDOW, MAX_TOKENS);
const outcomes = [
  await run(
    onCompacting === "server" ? "server (compact_20260112)" : `server impossible here: ${onCompacting}`,
    onCompacting,
    true,
  ),
  await run("client (clear, then summarize)", "client", false),
  await run("none", undefined, false),
];

console.log(
  `context: a ${STEPS}-step task, ${n(STEP_BYTES)} bytes a step, ${n(WINDOW)}-token window, max_tokens ${MAX_TOKENS}\n`,
);
console.log(
  formatTable(
    [
      "strategy",
      "ended",
      "steps",
      "requests",
      "input/request (mean)",
      "p95",
      "largest",
      "input sent (total)",
      "edits",
    ],
    outcomes.map((o) => {
      const s = o.inputs.length > 0 ? summarize(o.inputs) : undefined;
      const count = (kind: ContextEdit["kind"]) => o.edits.filter((e) => e.kind === kind).length;
      const kinds = [
        `${count("compaction")} compactions`,
        `${count("clear_tool_results")} clears`,
        `${count("summary")} summaries`,
      ];
      return [
        o.name,
        o.status,
        `${o.steps}/${STEPS}`,
        String(o.requests),
        s === undefined ? "-" : n(s.meanMs),
        s === undefined ? "-" : n(s.p95Ms),
        n(o.largest),
        n(o.inputs.reduce((a, b) => a + b, 0)),
        kinds.join(", "),
      ];
    }),
  ),
);

console.log("\ntokens sent at step k (the request that asked for step k):\n");
const marks = [25, 50, 75, 100, 125, 150, 175, 200].filter((k) => k <= STEPS);
console.log(
  formatTable(
    ["strategy", ...marks.map((k) => `k=${k}`)],
    outcomes.map((o) => [
      o.name,
      ...marks.map((k) => (o.inputs[k - 1] === undefined ? "stopped" : n(o.inputs[k - 1] ?? 0))),
    ]),
  ),
);

console.log("\nthe time a context edit adds to its step (harness's side; the fake answers at once):\n");
console.log(
  formatTable(
    ["strategy", "steps with an edit", "median step with", "median step without", "run"],
    outcomes.map((o) => {
      const withEdit = o.stepTimes.filter((t) => t.edited).map((t) => t.ms);
      const without = o.stepTimes.filter((t) => !t.edited).map((t) => t.ms);
      return [
        o.name,
        String(withEdit.length),
        withEdit.length > 0 ? ms(summarize(withEdit).medianMs) : "-",
        without.length > 0 ? ms(summarize(without).medianMs) : "-",
        ms(o.totalMs),
      ];
    }),
  ),
);
