/**
 * Exec benchmark (issue 11), in one run and one container: the executor path (`sandbox.exec`) against
 * a bare dockerode exec, the old per-call path (a second sandbox on the workspace with
 * `executor: false`) and the docker CLI, for `true`, `seq` and 1 MiB of output; host memory during a
 * 200 MB flood on each path; cold and warm sandbox open, `harness exec -- true` end to end, and
 * `harness run`'s time to its first tool_result. Prints tables, the targets, then one JSON line with
 * every figure. A report, not a test: no assertions on timings, only on correctness (exit codes, byte
 * counts, the executor really in use).
 *   npm run bench   (env: BENCH_ITERATIONS=30 BENCH_WARMUP=3 BENCH_START_REPS=5 BENCH_FLOOD_REPS=2)
 */
import { chownSync, mkdtempSync, realpathSync, rmSync, statSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Docker from "dockerode";
import { DockerSandbox } from "../src/sandbox/docker/docker-sandbox.js";
import { PER_CALL_PATH_NOTICE } from "../src/sandbox/docker/executor/executor-slot.js";
import { MIB, measurePaths, SEQ_BYTES } from "./exec-paths.js";
import { FLOOD_PEAK_TARGET_MB, floodTable, runFloods } from "./flood.js";
import { FLOOD_BYTES } from "./flood-spec.js";
import { measureStarts } from "./start-bench.js";
import { envInt, type Target, targetTable } from "./stats.js";
import { executorPids, removeContainers } from "./workspace-containers.js";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const ITERATIONS = envInt("BENCH_ITERATIONS", 30);
const WARMUP = envInt("BENCH_WARMUP", 3);
const START_REPS = envInt("BENCH_START_REPS", 5);
const FLOOD_REPS = envInt("BENCH_FLOOD_REPS", 2);

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

async function cleanup(): Promise<void> {
  await removeContainers(docker, workspace);
  rmSync(workspace, { recursive: true, force: true });
}
process.once("SIGINT", () => {
  console.error("exec-bench: interrupted, cleaning up");
  void cleanup().finally(() => process.exit(130));
});

function fail(what: string): never {
  throw new Error(`exec-bench: ${what}`);
}

let exitCode = 0;
try {
  console.log(`exec-bench: engine ${engine.Version} (API ${engine.ApiVersion}), node ${process.version}`);
  console.log(`workspace ${workspace} (user ${user}), ${ITERATIONS} iterations, ${WARMUP} warm-up each`);
  const others = (await docker.listContainers()).length;
  const load = loadavg().map((x) => x.toFixed(2));
  console.log(`other running containers: ${others}, load average ${load.join(" ")}, ${cpus().length} CPUs\n`);
  const notices: string[] = [];
  const sandbox = await DockerSandbox.open({
    workspace,
    removeOnStop: true,
    onProgress: (line) => notices.push(line),
  });
  const perCall = await DockerSandbox.open({ workspace, executor: false });
  const containerId = sandbox.containerId;
  const container = docker.getContainer(containerId);
  if (perCall.containerId !== containerId || perCall.acquired !== "reused")
    fail(`the per-call sandbox did not reuse ${containerId}: ${perCall.acquired} ${perCall.containerId}`);
  const first = await sandbox.exec("true");
  const pidsBefore = await executorPids(container);
  if (
    first.exitCode !== 0 ||
    notices.some((n) => n.includes(PER_CALL_PATH_NOTICE)) ||
    pidsBefore.length !== 1
  )
    fail(
      `the executor path is not in use: exit ${first.exitCode}, executors ${pidsBefore.join(",") || "none"}, notices: ${notices.join(" | ")}`,
    );

  // 1 + 2: per-exec cost, all methods interleaved in the same container.
  const paths = await measurePaths({
    executor: sandbox,
    perCall,
    container,
    user,
    warmup: WARMUP,
    iterations: ITERATIONS,
  });
  const pidsAfter = await executorPids(container);
  const executorRestarts = pidsAfter.join(",") === pidsBefore.join(",") ? 0 : pidsAfter.length;
  console.log(
    `Per exec, container ${containerId.slice(0, 12)} (seq = ${SEQ_BYTES} bytes, 1 MiB = ${MIB} bytes of stdout)`,
  );
  console.log(paths.table);
  console.log(
    `\nexecutor pid(s) before ${pidsBefore.join(",")}, after ${pidsAfter.join(",") || "none"}` +
      `${executorRestarts ? " (RESTARTED during the measurement)" : " (the same executor throughout)"}; ` +
      `notices: ${notices.length ? notices.join(" | ") : "none"}\n`,
  );

  // 3: host memory and throughput of a 200 MB flood, each run in its own child (same container).
  const flood = await runFloods(ROOT, FLOOD_REPS, workspace, containerId, user);
  console.log(
    `Flood: ${FLOOD_BYTES} bytes of stdout through one exec; maxRSS of a child process (node --import tsx)`,
  );
  console.log(`${floodTable(flood)}\n`);
  const worstFlood = Math.max(...flood.filter((f) => f.mode === "executor").map((f) => f.peakMB));

  // 4 + 5: cold and warm starts, last because cold ones remove the container used above.
  const starts = await measureStarts(docker, ROOT, workspace, START_REPS);
  console.log(`Starts, ${START_REPS} repetitions each (interleaved; cold = container removed first)`);
  console.log(starts.table);
  console.log(`harness run's containers: ${starts.runAcquired.join(", ")}\n`);

  const targets: Target[] = [
    ...paths.targets,
    {
      what: `flood peak maxRSS, executor path <= ${FLOOD_PEAK_TARGET_MB} MB (worst run)`,
      value: `${worstFlood} MB`,
      met: worstFlood <= FLOOD_PEAK_TARGET_MB,
    },
    ...starts.targets,
  ];
  console.log("Targets");
  console.log(`${targetTable(targets)}\n`);
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
      perExec: paths.perExec,
      ratios: paths.ratios,
      executorPids: { before: pidsBefore, after: pidsAfter },
      flood,
      start: starts.start,
      runAcquired: starts.runAcquired,
      targets,
    }),
  );
} catch (error) {
  console.error((error as Error).message);
  exitCode = 1;
} finally {
  await cleanup();
}
process.exit(exitCode);
