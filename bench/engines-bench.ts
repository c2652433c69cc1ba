/**
 * Per-engine benchmark (issue 12): for each engine this machine reaches (bench/engine-targets.ts),
 * in one run: harness's `sandbox.exec("true")` and that engine's own bare dockerode exec of `true`,
 * interleaved in the same container; then `harness run` (the built CLI) against the fake Messages
 * API, warm, timed from spawn to the request that carries the first tool_result. Every figure is
 * also given as a ratio to that engine's bare exec. Engines that are not there are listed with why.
 * A report, not a test: it checks correctness (exit codes, the tool_result), never timings.
 *   npm run bench:engines   (env: BENCH_ITERATIONS=30 BENCH_WARMUP=3 BENCH_RUN_REPS=5)
 */
import { chownSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { DockerSandbox } from "../src/sandbox/docker/docker-sandbox.js";
import { bareExec } from "./bare-exec.js";
import { type EngineTarget, probeEngines } from "./engine-targets.js";
import { timeFirstToolResult } from "./first-tool-result.js";
import { type KubernetesResult, measureKubernetes } from "./kubernetes-row.js";
import { envInt, formatTable, ms, ratio, type Summary, summarize } from "./stats.js";
import { removeContainers } from "./workspace-containers.js";

const ITERATIONS = envInt("BENCH_ITERATIONS", 30);
const WARMUP = envInt("BENCH_WARMUP", 3);
const RUN_REPS = envInt("BENCH_RUN_REPS", 5);

interface EngineResult {
  engine: string;
  version: string;
  acquired: string;
  harness: Summary;
  bare: Summary;
  firstToolResult: Summary;
  runAcquired: string;
}

function fail(what: string): never {
  throw new Error(`engines-bench: ${what}`);
}

/** WARMUP calls each, then ITERATIONS rounds alternating which of the two goes first. */
async function interleaved(a: () => Promise<void>, b: () => Promise<void>): Promise<[number[], number[]]> {
  const times: [number[], number[]] = [[], []];
  for (let i = 0; i < WARMUP; i++) {
    await a();
    await b();
  }
  for (let round = 0; round < ITERATIONS; round++) {
    const order = round % 2 === 0 ? [0, 1] : [1, 0];
    for (const k of order) {
      const started = performance.now();
      await (k === 0 ? a() : b());
      times[k]?.push(performance.now() - started);
    }
  }
  return times;
}

async function measure(target: EngineTarget): Promise<EngineResult> {
  const workspace = realpathSync(mkdtempSync(join(tmpdir(), "harness-engines-bench-")));
  if (process.getuid?.() === 0) chownSync(workspace, 1000, 1000);
  const state = mkdtempSync(join(tmpdir(), "harness-engines-bench-state-"));
  try {
    const sandbox = await DockerSandbox.open({
      workspace,
      network: "none",
      dockerEnv: { HOME: process.env["HOME"] ?? "/root", ...target.env },
      ...(target.runtime ? { runtime: target.runtime } : {}),
      onProgress: (line) => process.stderr.write(`[${target.name}] ${line}\n`),
    });
    const acquired = sandbox.acquired;
    const container = target.docker.getContainer(sandbox.containerId);
    const user = sandbox.resolvedSettings.user;
    const [harness, bare] = await interleaved(
      async () => {
        const r = await sandbox.exec("true");
        if (r.exitCode !== 0) fail(`${target.name}: harness true exited ${r.exitCode}: ${r.stderr}`);
      },
      async () => {
        const r = await bareExec(container, ["true"], user);
        if (r.exitCode !== 0) fail(`${target.name}: bare true exited ${r.exitCode}`);
      },
    );
    await sandbox.stop();
    // Warm: one run first (it finds the container the sandbox left, or makes its own), then the timed ones.
    await timeFirstToolResult(target, workspace, state, "engines-bench");
    const runs: number[] = [];
    const how = new Set<string>();
    for (let i = 0; i < RUN_REPS; i++) {
      const run = await timeFirstToolResult(target, workspace, state, "engines-bench");
      runs.push(run.ms);
      how.add(run.acquired);
    }
    return {
      engine: target.name,
      version: target.version,
      acquired,
      harness: summarize(harness),
      bare: summarize(bare),
      firstToolResult: summarize(runs),
      runAcquired: [...how].join("/"),
    };
  } finally {
    await removeContainers(target.docker, workspace).catch(() => {});
    rmSync(workspace, { recursive: true, force: true });
    rmSync(state, { recursive: true, force: true });
  }
}

const load = loadavg().map((x) => x.toFixed(2));
console.log(
  `engines-bench: node ${process.version}, ${cpus().length} CPUs, load ${load.join(" ")}; ` +
    `${ITERATIONS} exec rounds (+${WARMUP} warm-up), ${RUN_REPS} warm runs per engine`,
);
const probes = await probeEngines();
const results: EngineResult[] = [];
const missing: Array<{ engine: string; why: string }> = [];
let exitCode = 0;
for (const probe of probes) {
  if ("unavailable" in probe) {
    missing.push({ engine: probe.name, why: probe.unavailable });
    continue;
  }
  const { target } = probe;
  try {
    console.log(`measuring ${target.name} (${target.version}) ...`);
    results.push(await measure(target));
  } catch (error) {
    missing.push({ engine: target.name, why: `failed: ${(error as Error).message.split("\n")[0]}` });
    exitCode = 1;
  } finally {
    await target.close();
  }
}

const rows = results.map((r) => [
  r.engine,
  r.version,
  ms(r.bare.medianMs),
  ms(r.harness.medianMs),
  ms(r.harness.p95Ms),
  `${ratio(r.harness.medianMs, r.bare.medianMs)}x`,
  ms(r.firstToolResult.medianMs),
  ms(r.firstToolResult.p95Ms),
  `${ratio(r.firstToolResult.medianMs, r.bare.medianMs)}x`,
  r.runAcquired,
]);
console.log(
  `\n${formatTable(
    [
      "engine",
      "version",
      "bare true",
      "harness true",
      "p95",
      "vs bare",
      "run: 1st tool_result",
      "p95",
      "vs bare",
      "run's container",
    ],
    rows,
  )}`,
);
console.log(
  "\nbare true, harness true: medians of interleaved calls in one container; run: spawn of `harness run` " +
    "to the request carrying the first tool_result (fake Messages API, warm: image built, a run before).",
);
// Kubernetes: its own columns (a pod is created per sandbox; there is no reused container to run in).
const kubeconfig = process.env["HARNESS_TEST_KUBECONFIG"] || process.env["KUBECONFIG"];
let kubernetes: KubernetesResult | undefined;
if (kubeconfig === undefined) {
  missing.push({ engine: "kubernetes", why: "no HARNESS_TEST_KUBECONFIG or KUBECONFIG" });
} else {
  try {
    console.log("measuring kubernetes ...");
    kubernetes = await measureKubernetes(kubeconfig, {
      iterations: ITERATIONS,
      warmup: WARMUP,
      pods: RUN_REPS,
    });
    const k = kubernetes;
    console.log(
      `\n${formatTable(
        [
          "engine",
          "version",
          "bare exec true",
          "harness true",
          "p95",
          "vs bare",
          "pod create → 1st result",
          "p95",
          "stop",
        ],
        [
          [
            k.engine,
            k.version,
            ms(k.bare.medianMs),
            ms(k.harness.medianMs),
            ms(k.harness.p95Ms),
            `${ratio(k.harness.medianMs, k.bare.medianMs)}x`,
            ms(k.createToFirst.medianMs),
            ms(k.createToFirst.p95Ms),
            ms(k.stop.medianMs),
          ],
        ],
      )}`,
    );
  } catch (error) {
    missing.push({ engine: "kubernetes", why: `failed: ${(error as Error).message.split("\n")[0]}` });
    exitCode = 1;
  }
}
for (const m of missing) console.log(`not available: ${m.engine}: ${m.why}`);
console.log(
  JSON.stringify({
    bench: "engines",
    node: process.version,
    iterations: ITERATIONS,
    warmup: WARMUP,
    runReps: RUN_REPS,
    loadAverage: load,
    results,
    kubernetes,
    missing,
  }),
);
process.exit(exitCode);
