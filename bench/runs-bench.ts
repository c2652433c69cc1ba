/**
 * `harness runs` benchmark: 5,000 past runs in a temporary state directory (transcripts of 5 to 60 KB
 * built from the recorded hello example, one run in ten with saved outputs, a few of 4 MiB), then the
 * time to list them (the function, the whole command handler, and the built CLI when it has `runs`),
 * and the time of the prune that follows every run when nothing needs removing; each listing with
 * and without the index of summaries (`.index.json`, the first listing builds it). Target: under 1 s.
 *   node --import tsx bench/runs-bench.ts   (env: BENCH_RUNS=5000 BENCH_ITERATIONS=5, BENCH_CLI=bin/harness.mjs)
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { runsListCommand } from "../src/cli/runs/runs-command.js";
import { pruneRuns, retentionLimitsFromEnv } from "../src/runs/retention.js";
import { listRuns } from "../src/runs/run-catalog.js";
import { INDEX_FILE } from "../src/runs/summary-index.js";
import { runsDir } from "../src/state/run-layout.js";
import { envInt, formatTable, ms, runProcess, type Summary, summarize } from "./stats.js";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const RUNS = envInt("BENCH_RUNS", 5000);
const ITERATIONS = envInt("BENCH_ITERATIONS", 5);
const TARGET_MS = 1000;

const home = mkdtempSync(join(tmpdir(), "harness-runs-bench-"));
const env = { ...process.env, XDG_STATE_HOME: home };
const dir = runsDir(env);
mkdirSync(dir, { recursive: true });

try {
  const bytes = makeRuns(dir, RUNS);
  process.stdout.write(`${RUNS} runs, ${(bytes / 1024 ** 2).toFixed(0)} MiB in ${dir}\n\n`);
  const rows: Array<[string, Summary]> = [];
  let listed = 0;
  const index = join(dir, INDEX_FILE);
  rows.push([
    "listRuns, no index (first listing)",
    time(() => {
      rmSync(index, { force: true });
      listed = listRuns(dir, { env }).length;
    }),
  ]);
  if (listed !== RUNS) throw new Error(`listed ${listed} runs, expected ${RUNS}`);
  rows.push([
    "listRuns (index kept)",
    time(() => {
      listed = listRuns(dir, { env }).length;
    }),
  ]);
  if (listed !== RUNS) throw new Error(`listed ${listed} runs, expected ${RUNS}`);
  const quiet = { stdout: () => undefined, stderr: () => undefined, env };
  rows.push(["runs command handler (table)", await timeAsync(() => runsListCommand({}, quiet))]);
  rows.push([
    "prune after a run (nothing to remove)",
    time(() => {
      const report = pruneRuns(dir, retentionLimitsFromEnv({}));
      if (report.removed.length > 0) throw new Error("the bench's runs should all be kept");
    }),
  ]);
  const cli = process.env["BENCH_CLI"] ?? join(ROOT, "bin", "harness.mjs");
  const probe = await runProcess(process.execPath, [cli, "runs", "--output-format", "json"], { env });
  if (probe.code === 0 && (JSON.parse(probe.stdout) as unknown[]).length === RUNS) {
    for (const cold of [true, false]) {
      const samples: number[] = [];
      for (let i = 0; i < ITERATIONS; i++) {
        if (cold) rmSync(index, { force: true });
        const started = performance.now();
        const run = await runProcess(process.execPath, [cli, "runs"], { env });
        samples.push(performance.now() - started);
        if (run.code !== 0) throw new Error(`harness runs exited ${run.code}: ${run.stderr}`);
      }
      rows.push([`node bin/harness.mjs runs (whole CLI${cold ? ", no index" : ""})`, summarize(samples)]);
    }
  } else {
    process.stdout.write("(the built CLI has no `runs` command yet, or dist/ is stale: CLI row skipped)\n\n");
  }
  const table = rows.map(([name, s]) => [name, ms(s.medianMs), ms(s.p90Ms), ms(s.maxMs)]);
  process.stdout.write(`${formatTable(["", "median", "p90", "max"], table)}\n\n`);
  const worst = Math.max(...rows.map(([, s]) => s.medianMs));
  process.stdout.write(
    `target: under ${TARGET_MS} ms; slowest median ${ms(worst)}: ${worst < TARGET_MS ? "met" : "MISSED"}\n`,
  );
  process.stdout.write(`${JSON.stringify({ runs: RUNS, bytes, results: Object.fromEntries(rows) })}\n`);
} finally {
  rmSync(home, { recursive: true, force: true });
}

function time(fn: () => void): Summary {
  const samples: number[] = [];
  for (let i = 0; i < ITERATIONS; i++) {
    const started = performance.now();
    fn();
    samples.push(performance.now() - started);
  }
  return summarize(samples);
}

async function timeAsync(fn: () => Promise<unknown>): Promise<Summary> {
  const samples: number[] = [];
  for (let i = 0; i < ITERATIONS; i++) {
    const started = performance.now();
    await fn();
    samples.push(performance.now() - started);
  }
  return summarize(samples);
}

/** Writes `count` runs over the last 20 days; returns the bytes written. */
function makeRuns(runsDirectory: string, count: number): number {
  const example = readFileSync(join(ROOT, "examples", "hello", "transcript.jsonl"), "utf8")
    .trimEnd()
    .split("\n");
  const [start = "", ...rest] = example;
  const end = rest.pop() ?? "";
  const middle = rest.join("\n");
  const now = Date.now();
  let total = 0;
  for (let i = 0; i < count; i++) {
    const startedMs = now - 2 * 60_000 - Math.floor((i / count) * 20 * 86_400_000);
    const id = `${new Date(startedMs).toISOString().replace(/[:.]/g, "-")}-${9_000_000 + i}`;
    // 1 to 12 tool steps of a few KB each, plus, for a handful, 4 MiB of output kept in the transcript.
    const steps = 1 + (i % 12);
    const filler = i % 1000 === 7 ? 4 * 1024 ** 2 : 3000 + (i % 5) * 500;
    const step = JSON.stringify({
      type: "tool_result",
      time: new Date(startedMs).toISOString(),
      id: `toolu_${i}`,
      name: "bash",
      isError: false,
      content: "ok",
      command: "npm test",
      stdout: "x".repeat(filler),
      stderr: "",
      exitCode: 0,
      durationMs: 1200,
    });
    const text = [start, middle, ...Array.from({ length: steps }, () => step), end].join("\n");
    writeFileSync(join(runsDirectory, `${id}.jsonl`), `${text}\n`);
    total += Buffer.byteLength(text) + 1;
    if (i % 10 === 0) {
      const outputs = join(runsDirectory, `${id}.outputs`);
      mkdirSync(outputs);
      writeFileSync(join(outputs, "out-1.stdout"), Buffer.alloc(64 * 1024, 0x61));
      writeFileSync(join(outputs, "out-1.stderr"), Buffer.alloc(1024, 0x62));
      total += 65 * 1024;
    }
  }
  return total;
}
