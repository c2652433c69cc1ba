/**
 * Sections 1 and 2 of exec-bench: one call's cost on each path, all interleaved in one container.
 * executor: `sandbox.exec` on the executor; per-call: a second DockerSandbox on the same workspace
 * (so the same container) with `executor: false`; bare: the minimal dockerode exec (bare-exec.ts);
 * docker-cli: `docker exec`. `true`, `seq 1 20000` and 1 MiB of output (byte counts checked).
 */
import type Docker from "dockerode";
import type { DockerSandbox } from "../src/sandbox/docker/docker-sandbox.js";
import { bareExec } from "./bare-exec.js";
import { formatTable, ms, ratio, roundRobin, runProcess, type Summary, type Target } from "./stats.js";

const SEQ_N = 20_000;
let seqBytes = 0;
for (let i = 1; i <= SEQ_N; i++) seqBytes += String(i).length + 1;
export const SEQ_BYTES = seqBytes;
export const MIB = 1_048_576;

export interface PathContext {
  executor: DockerSandbox;
  perCall: DockerSandbox;
  container: Docker.Container;
  user: string;
  warmup: number;
  iterations: number;
}

/** A workload: the shell command for the sandboxes, argv for the bare exec, the stdout bytes it must give. */
interface Workload {
  label: string;
  command: string;
  argv: string[];
  bytes: number;
}

const WORKLOADS: Workload[] = [
  { label: "true", command: "true", argv: ["true"], bytes: 0 },
  {
    label: "1 MiB",
    command: `head -c ${MIB} /dev/zero`,
    argv: ["head", "-c", String(MIB), "/dev/zero"],
    bytes: MIB,
  },
  { label: `seq 1 ${SEQ_N}`, command: `seq 1 ${SEQ_N}`, argv: ["seq", "1", String(SEQ_N)], bytes: SEQ_BYTES },
];

function fail(what: string): never {
  throw new Error(`exec-bench: ${what}`);
}

function methods(ctx: PathContext): Record<string, () => Promise<void>> {
  const all: Record<string, () => Promise<void>> = {};
  for (const w of WORKLOADS) {
    for (const [path, sandbox] of [
      ["executor", ctx.executor],
      ["per-call", ctx.perCall],
    ] as const) {
      all[`${path} ${w.label}`] = async () => {
        const r = await sandbox.exec(w.command);
        if (r.exitCode !== 0 || r.stdoutBytes !== w.bytes)
          fail(
            `${path} ${w.label}: exit ${r.exitCode}, ${r.stdoutBytes} B of stdout (want ${w.bytes}): ${r.stderr}`,
          );
      };
    }
    all[`bare ${w.label}`] = async () => {
      const r = await bareExec(ctx.container, w.argv, ctx.user);
      if (r.exitCode !== 0 || r.stdoutBytes !== w.bytes)
        fail(`bare ${w.label}: exit ${r.exitCode}, ${r.stdoutBytes} B of stdout (want ${w.bytes})`);
    };
  }
  all["bare sh -c 'bash -c true'"] = async () => {
    const r = await bareExec(ctx.container, ["/bin/sh", "-c", "bash -c true"], ctx.user);
    if (r.exitCode !== 0) fail(`bare sh/bash true exited ${r.exitCode}`);
  };
  all["docker-cli true"] = async () => {
    const r = await runProcess("docker", ["exec", "-u", ctx.user, ctx.container.id, "true"]);
    if (r.code !== 0) fail(`docker exec true exited ${r.code}: ${r.stderr}`);
  };
  return all;
}

export interface PathFigures {
  perExec: Record<string, Summary>;
  ratios: Record<string, number>;
  targets: Target[];
  table: string;
}

export async function measurePaths(ctx: PathContext): Promise<PathFigures> {
  const perExec = await roundRobin(methods(ctx), ctx.warmup, ctx.iterations);
  const s = (name: string): Summary => perExec[name] ?? fail(`no figure for ${name}`);
  const bareOf = (name: string): string =>
    `bare ${WORKLOADS.find((w) => name.endsWith(w.label))?.label ?? "true"}`;
  const ratios: Record<string, number> = {};
  for (const w of WORKLOADS) {
    ratios[`executor/bare ${w.label}`] = ratio(
      s(`executor ${w.label}`).medianMs,
      s(`bare ${w.label}`).medianMs,
    );
    ratios[`per-call/bare ${w.label}`] = ratio(
      s(`per-call ${w.label}`).medianMs,
      s(`bare ${w.label}`).medianMs,
    );
  }
  ratios["executor/per-call true"] = ratio(s("executor true").medianMs, s("per-call true").medianMs);
  ratios["docker-cli/bare true"] = ratio(s("docker-cli true").medianMs, s("bare true").medianMs);
  const exec = s("executor true");
  const overBare = ratios["executor/bare true"] ?? Number.NaN;
  const targets: Target[] = [
    { what: "executor true, median <= 10 ms", value: ms(exec.medianMs), met: exec.medianMs <= 10 },
    { what: "executor true, median <= 0.2x bare", value: `${overBare}x`, met: overBare <= 0.2 },
    { what: "executor true, p95 <= 20 ms", value: ms(exec.p95Ms), met: exec.p95Ms <= 20 },
  ];
  const rows = Object.entries(perExec).map(([name, f]) => [
    name,
    ms(f.medianMs),
    ms(f.p95Ms),
    ms(f.p90Ms),
    ms(f.minMs),
    ms(f.maxMs),
    `${ratio(f.medianMs, s(bareOf(name)).medianMs)}x`,
  ]);
  const table = formatTable(["method", "median", "p95", "p90", "min", "max", "vs bare"], rows);
  return { perExec, ratios, targets, table };
}
