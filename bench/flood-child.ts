/**
 * Child process of exec-bench: floods 200 MB through one exec and reports its own memory.
 *   node --import tsx bench/flood-child.ts executor WORKSPACE   (sandbox.exec, executor path)
 *   node --import tsx bench/flood-child.ts per-call WORKSPACE   (sandbox.exec, `executor: false`)
 *   node --import tsx bench/flood-child.ts bare CONTAINER_ID UID:GID
 * Prints one JSON line (FloodReport) on stdout. Memory is this process's only (maxRSS in KiB).
 */
import { FLOOD_BYTES, FLOOD_COMMAND, type FloodReport } from "./flood-spec.js";

function kib(): { maxRssKiB: number; rssKiB: number } {
  return { maxRssKiB: process.resourceUsage().maxRSS, rssKiB: Math.round(process.memoryUsage().rss / 1024) };
}

async function sandboxFlood(mode: "executor" | "per-call", workspace: string): Promise<FloodReport> {
  const { DockerSandbox } = await import("../src/sandbox/docker/docker-sandbox.js");
  const notices: string[] = [];
  const sandbox = await DockerSandbox.open({
    workspace,
    executor: mode === "executor",
    onProgress: (line) => notices.push(line),
  });
  // Warm the exec path (code loaded, JIT, sockets) before taking the baseline.
  for (let i = 0; i < 3; i++) await sandbox.exec("true");
  const baseline = kib();
  const started = performance.now();
  const result = await sandbox.exec(FLOOD_COMMAND);
  const wallMs = performance.now() - started;
  const peak = kib();
  return {
    mode,
    baselineMaxRssKiB: baseline.maxRssKiB,
    baselineRssKiB: baseline.rssKiB,
    peakMaxRssKiB: peak.maxRssKiB,
    endRssKiB: peak.rssKiB,
    durationMs: result.durationMs,
    wallMs,
    exitCode: result.exitCode ?? null,
    stdoutBytes: result.stdoutBytes,
    stderrBytes: result.stderrBytes,
    keptStdoutChars: result.stdout.length,
    notices,
  };
}

async function bareFlood(containerId: string, user: string): Promise<FloodReport> {
  const { default: Docker } = await import("dockerode");
  const { bareExec } = await import("./bare-exec.js");
  const container = new Docker().getContainer(containerId);
  for (let i = 0; i < 3; i++) await bareExec(container, ["true"], user);
  const baseline = kib();
  const result = await bareExec(container, ["/bin/sh", "-c", FLOOD_COMMAND], user);
  const peak = kib();
  return {
    mode: "bare",
    baselineMaxRssKiB: baseline.maxRssKiB,
    baselineRssKiB: baseline.rssKiB,
    peakMaxRssKiB: peak.maxRssKiB,
    endRssKiB: peak.rssKiB,
    durationMs: result.durationMs,
    wallMs: result.durationMs,
    exitCode: result.exitCode,
    stdoutBytes: result.stdoutBytes,
    stderrBytes: result.stderrBytes,
    keptStdoutChars: 0,
    notices: [],
  };
}

const [mode, first, second] = process.argv.slice(2);
let report: FloodReport;
if ((mode === "executor" || mode === "per-call") && first) report = await sandboxFlood(mode, first);
else if (mode === "bare" && first && second) report = await bareFlood(first, second);
else throw new Error("usage: flood-child.ts executor|per-call WORKSPACE | bare CONTAINER_ID UID:GID");
// Exits explicitly: the sandbox is left open (its stop would end every process of the sandbox user,
// the parent's executor too), and an open executor's attach stream keeps the event loop alive.
process.stdout.write(`${JSON.stringify(report)}\n`, () =>
  process.exit(report.stdoutBytes === FLOOD_BYTES ? 0 : 3),
);
