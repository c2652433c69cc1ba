/**
 * Exec benchmark: harness's exec path against a bare dockerode exec, the docker CLI and the whole
 * `harness exec` CLI, all in one container; cold and warm sandbox open; host memory during a 200 MB
 * flood. Prints tables, then one JSON line with every figure. A report, not a test: no assertions on
 * timings, only on correctness (exit codes, byte counts).
 *   npm run bench   (env: BENCH_ITERATIONS=30 BENCH_WARMUP=3 BENCH_START_REPS=5 BENCH_FLOOD_REPS=2)
 */
import { chownSync, mkdtempSync, realpathSync, rmSync, statSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Docker from "dockerode";
import { DockerSandbox } from "../src/sandbox/docker/docker-sandbox.js";
import { LABEL_WORKSPACE } from "../src/sandbox/docker/labels.js";
import { bareExec } from "./bare-exec.js";
import { floodTable, runFloods } from "./flood.js";
import { FLOOD_BYTES } from "./flood-spec.js";
import { envInt, formatTable, ms, ratio, runProcess, type Summary, summarize } from "./stats.js";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const ITERATIONS = envInt("BENCH_ITERATIONS", 30);
const WARMUP = envInt("BENCH_WARMUP", 3);
const START_REPS = envInt("BENCH_START_REPS", 5);
const FLOOD_REPS = envInt("BENCH_FLOOD_REPS", 2);
const SEQ_N = 20_000;
let SEQ_BYTES = 0;
for (let i = 1; i <= SEQ_N; i++) SEQ_BYTES += String(i).length + 1;

const docker = new Docker();
try {
  await docker.ping();
} catch (error) {
  const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
  console.error(`exec-bench: Docker is not reachable (${reason}); start the engine or set DOCKER_HOST.`);
  process.exit(1);
}
const engine = await docker.version();

const workspace = realpathSync(mkdtempSync(join(tmpdir(), "harness-bench-")));
if (process.getuid?.() === 0) chownSync(workspace, 1000, 1000);
const owner = statSync(workspace);
const user = `${owner.uid}:${owner.gid}`;

async function removeContainers(): Promise<void> {
  const found = await docker.listContainers({
    all: true,
    filters: { label: [`${LABEL_WORKSPACE}=${workspace}`] },
  });
  for (const info of found)
    await docker
      .getContainer(info.Id)
      .remove({ force: true })
      .catch(() => {});
}
async function cleanup(): Promise<void> {
  await removeContainers();
  rmSync(workspace, { recursive: true, force: true });
}
process.once("SIGINT", () => {
  console.error("exec-bench: interrupted, cleaning up");
  void cleanup().finally(() => process.exit(130));
});

function fail(what: string): never {
  throw new Error(`exec-bench: ${what}`);
}

/** Runs every method WARMUP times, then ITERATIONS rounds, each round starting at another method. */
async function roundRobin(methods: Record<string, () => Promise<void>>): Promise<Record<string, Summary>> {
  const names = Object.keys(methods);
  const samples: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (const name of names) for (let i = 0; i < WARMUP; i++) await methods[name]?.();
  for (let round = 0; round < ITERATIONS; round++) {
    for (let k = 0; k < names.length; k++) {
      const name = names[(round + k) % names.length] ?? fail("no method");
      const started = performance.now();
      await methods[name]?.();
      samples[name]?.push(performance.now() - started);
    }
  }
  return Object.fromEntries(names.map((n) => [n, summarize(samples[n] ?? [])]));
}

let exitCode = 0;
try {
  console.log(`exec-bench: engine ${engine.Version} (API ${engine.ApiVersion}), node ${process.version}`);
  console.log(`workspace ${workspace} (user ${user}), ${ITERATIONS} iterations, ${WARMUP} warm-up each`);
  const others = (await docker.listContainers()).length;
  const load = loadavg().map((x) => x.toFixed(2));
  console.log(`other running containers: ${others}, load average ${load.join(" ")}, ${cpus().length} CPUs\n`);
  const sandbox = await DockerSandbox.open({ workspace, removeOnStop: true });
  const containerId = sandbox.containerId;
  const container = docker.getContainer(containerId);
  const cliArgs = [join(ROOT, "bin/harness.mjs"), "exec", "--workspace", workspace, "--", "true"];
  const cliEnv = { ...process.env, DEBUG: "" };

  // 1 + 2: per-exec cost, all methods interleaved in the same container.
  const perExec = await roundRobin({
    "harness true": async () => {
      const r = await sandbox.exec("true");
      if (r.exitCode !== 0) fail(`harness true exited ${r.exitCode}: ${r.stderr}`);
    },
    "bare true": async () => {
      const r = await bareExec(container, ["true"], user);
      if (r.exitCode !== 0) fail(`bare true exited ${r.exitCode}`);
    },
    "bare sh -c 'bash -c true'": async () => {
      const r = await bareExec(container, ["/bin/sh", "-c", "bash -c true"], user);
      if (r.exitCode !== 0) fail(`bare sh/bash true exited ${r.exitCode}`);
    },
    "docker-cli true": async () => {
      const r = await runProcess("docker", ["exec", "-u", user, containerId, "true"]);
      if (r.code !== 0) fail(`docker exec true exited ${r.code}: ${r.stderr}`);
    },
    "e2e harness exec true": async () => {
      const r = await runProcess(process.execPath, cliArgs, { cwd: ROOT, env: cliEnv });
      if (r.code !== 0) fail(`harness exec true exited ${r.code}: ${r.stderr}`);
    },
    "harness seq 1 20000": async () => {
      const r = await sandbox.exec(`seq 1 ${SEQ_N}`);
      if (r.exitCode !== 0 || r.stdoutBytes !== SEQ_BYTES)
        fail(`harness seq: exit ${r.exitCode}, ${r.stdoutBytes} B`);
    },
    "bare seq 1 20000": async () => {
      const r = await bareExec(container, ["seq", "1", String(SEQ_N)], user);
      if (r.exitCode !== 0 || r.stdoutBytes !== SEQ_BYTES)
        fail(`bare seq: exit ${r.exitCode}, ${r.stdoutBytes} B`);
    },
  });
  const still = (
    await docker.listContainers({ filters: { label: [`${LABEL_WORKSPACE}=${workspace}`] } })
  ).map((c) => c.Id);
  if (still.length !== 1 || still[0] !== containerId)
    fail(`the CLI did not reuse container ${containerId}: ${still}`);

  const med = (name: string): number => perExec[name]?.medianMs ?? Number.NaN;
  const ratios = {
    harnessOverBare: ratio(med("harness true"), med("bare true")),
    dockerCliOverBare: ratio(med("docker-cli true"), med("bare true")),
    harnessOverBareShBash: ratio(med("harness true"), med("bare sh -c 'bash -c true'")),
    harnessSeqOverBareSeq: ratio(med("harness seq 1 20000"), med("bare seq 1 20000")),
    e2eMedianMs: med("e2e harness exec true"),
  };
  const target = (name: string): string =>
    name === "harness true"
      ? `target <= 1.3x bare: ${ratios.harnessOverBare <= 1.3 ? "met" : "MISSED"}`
      : name === "e2e harness exec true"
        ? `target < 0.5 s: ${ratios.e2eMedianMs < 500 ? "met" : "MISSED"}`
        : "";
  const rows = Object.entries(perExec).map(([name, s]) => [
    name,
    ms(s.medianMs),
    ms(s.p90Ms),
    ms(s.minMs),
    ms(s.maxMs),
    `${ratio(s.medianMs, med(name.includes("seq") ? "bare seq 1 20000" : "bare true"))}x`,
    target(name),
  ]);
  console.log(
    `Per exec, container ${containerId.slice(0, 12)} (seq 1 ${SEQ_N} = ${SEQ_BYTES} bytes of stdout)`,
  );
  console.log(formatTable(["method", "median", "p90", "min", "max", "vs bare", ""], rows));
  console.log(
    `\nharness/bare ${ratios.harnessOverBare}x (target <= 1.3x), docker-cli/bare ${ratios.dockerCliOverBare}x, ` +
      `harness/bare(sh+bash) ${ratios.harnessOverBareShBash}x, harness seq/bare seq ${ratios.harnessSeqOverBareSeq}x, ` +
      `end-to-end median ${ms(ratios.e2eMedianMs)} (target < 0.5 s)\n`,
  );

  // 4: host memory and throughput of a 200 MB flood, each run in its own child (same container).
  const flood = await runFloods(ROOT, FLOOD_REPS, workspace, containerId, user);
  console.log(
    `Flood: ${FLOOD_BYTES} bytes of stdout through one exec; maxRSS of a child process (node --import tsx)`,
  );
  console.log(`${floodTable(flood)}\n`);

  // 3: cold vs warm open (+ first exec). Last, because cold removes the container used above.
  const cold: number[] = [];
  const warm: number[] = [];
  for (let rep = 0; rep < START_REPS; rep++) {
    for (const kind of ["cold", "warm"] as const) {
      if (kind === "cold") await removeContainers();
      const started = performance.now();
      const opened = await DockerSandbox.open({ workspace });
      const r = await opened.exec("true");
      const took = performance.now() - started;
      const want = kind === "cold" ? "created" : "reused";
      if (opened.acquired !== want || r.exitCode !== 0)
        fail(`${kind} open: acquired ${opened.acquired}, exit ${r.exitCode}`);
      (kind === "cold" ? cold : warm).push(took);
    }
  }
  const start = { cold: summarize(cold), warm: summarize(warm) };
  console.log(`Sandbox open + first exec of true, ${START_REPS} repetitions each (interleaved)`);
  console.log(
    formatTable(
      ["start", "median", "p90", "min", "max"],
      Object.entries(start).map(([name, s]) => [
        `${name} (${name === "cold" ? "created" : "reused"})`,
        ms(s.medianMs),
        ms(s.p90Ms),
        ms(s.minMs),
        ms(s.maxMs),
      ]),
    ),
  );
  console.log("");

  console.log(
    JSON.stringify({
      bench: "exec",
      engine: engine.Version,
      node: process.version,
      iterations: ITERATIONS,
      warmup: WARMUP,
      startReps: START_REPS,
      floodReps: FLOOD_REPS,
      containerId,
      otherContainers: others,
      loadAverage: load,
      seqBytes: SEQ_BYTES,
      perExec,
      ratios,
      flood,
      start,
    }),
  );
} catch (error) {
  console.error((error as Error).message);
  exitCode = 1;
} finally {
  await cleanup();
}
process.exit(exitCode);
