/**
 * Section 4 of exec-bench: a 200 MB flood through one exec, each run in a fresh child process so its
 * maxRSS is the flood's alone. The executor path, the per-call path (`executor: false`) and a bare
 * counting dockerode exec, interleaved.
 */
import { join } from "node:path";
import { PER_CALL_PATH_NOTICE } from "../src/sandbox/docker/executor/executor-slot.js";
import { FLOOD_BYTES, type FloodReport } from "./flood-spec.js";
import { formatTable, ms, ratio, runProcess } from "./stats.js";

/** The flood target: the executor path's peak maxRSS. */
export const FLOOD_PEAK_TARGET_MB = 150;

export interface FloodFigure extends FloodReport {
  baselineMB: number;
  peakMB: number;
  /** Peak minus baseline: what the flood itself added. */
  deltaMB: number;
  peakOverBaseline: number;
  throughputMBps: number;
}

const mb = (kib: number): number => Math.round((kib / 1024) * 10) / 10;

async function runChild(root: string, args: string[]): Promise<FloodFigure> {
  const child = await runProcess(
    process.execPath,
    ["--import", "tsx", join(root, "bench/flood-child.ts"), ...args],
    {
      cwd: root,
    },
  );
  const last = child.stdout.trim().split("\n").at(-1) ?? "";
  if (!last.startsWith("{")) {
    throw new Error(`exec-bench: flood child '${args[0]}' failed (exit ${child.code}):\n${child.stderr}`);
  }
  const f = JSON.parse(last) as FloodReport;
  if (f.stdoutBytes !== FLOOD_BYTES || f.exitCode !== 0) {
    throw new Error(
      `exec-bench: flood through ${f.mode} delivered ${f.stdoutBytes} stdout bytes (want ${FLOOD_BYTES}), exit ${f.exitCode}`,
    );
  }
  if (f.mode === "executor" && f.notices.some((n) => n.includes(PER_CALL_PATH_NOTICE))) {
    throw new Error(`exec-bench: the executor flood did not run on the executor: ${f.notices.join(" | ")}`);
  }
  return {
    ...f,
    baselineMB: mb(f.baselineMaxRssKiB),
    peakMB: mb(f.peakMaxRssKiB),
    deltaMB: mb(f.peakMaxRssKiB - f.baselineMaxRssKiB),
    peakOverBaseline: ratio(f.peakMaxRssKiB, f.baselineMaxRssKiB),
    throughputMBps: Math.round((FLOOD_BYTES / 1e6 / (f.durationMs / 1000)) * 10) / 10,
  };
}

export async function runFloods(
  root: string,
  reps: number,
  workspace: string,
  containerId: string,
  user: string,
): Promise<FloodFigure[]> {
  const figures: FloodFigure[] = [];
  for (let rep = 0; rep < reps; rep++) {
    const order = [
      ["executor", workspace],
      ["per-call", workspace],
      ["bare", containerId, user],
    ];
    for (let k = 0; k < order.length; k++)
      figures.push(await runChild(root, order[(rep + k) % order.length] ?? []));
  }
  return figures;
}

export function floodTable(figures: readonly FloodFigure[]): string {
  return formatTable(
    [
      "run",
      "baseline",
      "peak maxRSS",
      "peak-base",
      "peak/base",
      "exec time",
      "throughput",
      "stdout bytes",
      "target",
    ],
    figures.map((f, i) => [
      `${f.mode} #${Math.floor(i / 3) + 1}`,
      `${f.baselineMB} MB`,
      `${f.peakMB} MB`,
      `${f.deltaMB} MB`,
      `${f.peakOverBaseline}x`,
      ms(f.durationMs),
      `${f.throughputMBps} MB/s`,
      String(f.stdoutBytes),
      f.mode === "executor"
        ? `peak <= ${FLOOD_PEAK_TARGET_MB} MB: ${f.peakMB <= FLOOD_PEAK_TARGET_MB ? "met" : "MISSED"}`
        : "(reference)",
    ]),
  );
}
