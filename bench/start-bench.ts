/**
 * Sections 4 and 5 of exec-bench, last because cold starts remove the container: sandbox open plus
 * its first exec (in this process), `harness exec -- true` end to end (the built CLI), cold (the
 * container removed first) and warm, and `harness run`'s time to its first tool_result, warm.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type Docker from "dockerode";
import { DockerSandbox } from "../src/sandbox/docker/docker-sandbox.js";
import { type RunTarget, timeFirstToolResult } from "./first-tool-result.js";
import { formatTable, ms, runProcess, type Summary, summarize, type Target } from "./stats.js";
import { removeContainers } from "./workspace-containers.js";

/** Warm `harness exec -- true` and warm time to the first tool_result: at most this. */
const WARM_TARGET_MS = 350;

export interface StartFigures {
  start: Record<string, Summary>;
  /** How each `harness run` got its container (reused, started, created). */
  runAcquired: string[];
  targets: Target[];
  table: string;
}

function fail(what: string): never {
  throw new Error(`exec-bench: ${what}`);
}

export async function measureStarts(
  docker: Docker,
  root: string,
  workspace: string,
  reps: number,
): Promise<StartFigures> {
  const cliArgs = [join(root, "bin/harness.mjs"), "exec", "--workspace", workspace, "--", "true"];
  const cliEnv = { ...process.env, DEBUG: "" };
  const dockerHost = process.env["DOCKER_HOST"];
  const target: RunTarget = { name: "docker", docker, env: dockerHost ? { DOCKER_HOST: dockerHost } : {} };
  const state = mkdtempSync(join(tmpdir(), "harness-bench-state-"));
  const samples: Record<string, number[]> = {
    "open+exec cold": [],
    "open+exec warm": [],
    "harness exec cold": [],
    "harness exec warm": [],
    "run 1st tool_result warm": [],
  };
  const runAcquired: string[] = [];
  const time = async <T>(name: string, step: () => Promise<T>, removeFirst = false): Promise<T> => {
    if (removeFirst) await removeContainers(docker, workspace);
    const started = performance.now();
    const value = await step();
    samples[name]?.push(performance.now() - started);
    return value;
  };
  const open = (want: string) => async (): Promise<DockerSandbox> => {
    const opened = await DockerSandbox.open({ workspace });
    const r = await opened.exec("true");
    if (opened.acquired !== want || r.exitCode !== 0)
      fail(`open (${want} expected): acquired ${opened.acquired}, exit ${r.exitCode}`);
    return opened;
  };
  const cli = async () => {
    const r = await runProcess(process.execPath, cliArgs, { cwd: root, env: cliEnv });
    if (r.code !== 0) fail(`harness exec -- true exited ${r.code}: ${r.stderr}`);
  };
  const run = async (): Promise<number> => {
    const r = await timeFirstToolResult(target, workspace, state, "exec-bench");
    runAcquired.push(r.acquired);
    return r.ms;
  };
  try {
    // One of each first, untimed, so that "warm" means warm for the CLI and the run too.
    await cli();
    await run();
    runAcquired.length = 0;
    for (let rep = 0; rep < reps; rep++) {
      // Stopped outside the timing: that ends its executor and whatever else it left.
      await (await time("open+exec cold", open("created"), true)).stop();
      await (await time("open+exec warm", open("reused"))).stop();
      await time("harness exec cold", cli, true);
      await time("harness exec warm", cli);
      // From spawn to the tool_result's arrival, not to the process's end.
      samples["run 1st tool_result warm"]?.push(await run());
    }
  } finally {
    rmSync(state, { recursive: true, force: true });
  }
  const start = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, summarize(v)]));
  const s = (name: string): Summary => start[name] ?? fail(`no figure for ${name}`);
  const targets: Target[] = [
    {
      what: `harness exec -- true warm, median <= ${WARM_TARGET_MS} ms`,
      value: ms(s("harness exec warm").medianMs),
      met: s("harness exec warm").medianMs <= WARM_TARGET_MS,
    },
    {
      what: `run's first tool_result warm, median <= ${WARM_TARGET_MS} ms`,
      value: ms(s("run 1st tool_result warm").medianMs),
      met: s("run 1st tool_result warm").medianMs <= WARM_TARGET_MS,
    },
  ];
  const table = formatTable(
    ["start", "median", "p95", "p90", "min", "max"],
    Object.entries(start).map(([name, f]) => [
      name,
      ms(f.medianMs),
      ms(f.p95Ms),
      ms(f.p90Ms),
      ms(f.minMs),
      ms(f.maxMs),
    ]),
  );
  return { start, runAcquired, targets, table };
}
