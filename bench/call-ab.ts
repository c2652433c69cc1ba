/**
 * Before/after per call, interleaved in one run and one container (issue 35): `sandbox.exec("true")`
 * on this tree's harness and on another tree's (BENCH_BASE: a worktree of the base commit), beside a
 * bare dockerode exec of `true`, back to back and each after 1 s idle. Each system has its own
 * executor in the shared container; the order inside each round is shuffled. Ratios are of medians
 * from this one run: the machine is shared, so absolute figures across runs are not comparable.
 *   BENCH_BASE=/work/wt/base node --import tsx bench/call-ab.ts   (env: BENCH_ROUNDS=20)
 */
import { chownSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { DockerSandbox } from "../src/sandbox/docker/docker-sandbox.js";
import { bareExec } from "./bare-exec.js";
import { envInt, formatTable, summarize } from "./stats.js";

const ROUNDS = envInt("BENCH_ROUNDS", 20);
const IDLE_MS = envInt("BENCH_IDLE_MS", 1000);
const base = process.env["BENCH_BASE"];
type Open = typeof DockerSandbox.open;
const baseOpen: Open | undefined = base
  ? (await import(join(base, "src/sandbox/docker/docker-sandbox.ts"))).DockerSandbox.open
  : undefined;

const workspace = realpathSync(mkdtempSync(join(tmpdir(), "harness-ab-")));
if (process.getuid?.() === 0) chownSync(workspace, 1000, 1000);
const image = process.env["BENCH_IMAGE"];
const after = await DockerSandbox.open({ workspace, removeOnStop: true, ...(image ? { image } : {}) });
const before = baseOpen ? await baseOpen({ workspace, ...(image ? { image } : {}) }) : undefined;
const container = new Docker().getContainer(after.containerId);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const runs: Record<string, () => Promise<unknown>> = {
  bare: () => bareExec(container, ["true"], "1000:1000"),
  after: async () => {
    const r = await after.exec("true");
    if (r.exitCode !== 0) throw new Error(`after: ${r.exitCode} ${r.stderr}`);
  },
};
if (before)
  runs["before"] = async () => {
    const r = await before.exec("true");
    if (r.exitCode !== 0) throw new Error(`before: ${r.exitCode} ${r.stderr}`);
  };
const samples: Record<string, number[]> = {};
const time = async (key: string, f: () => Promise<unknown>) => {
  const t = performance.now();
  await f();
  samples[key] = [...(samples[key] ?? []), performance.now() - t];
};
const shuffle = <T>(xs: T[]) =>
  xs
    .map((x) => [Math.random(), x] as const)
    .sort((a, b) => a[0] - b[0])
    .map((p) => p[1]);
const load0 = loadavg()[0]?.toFixed(2);
try {
  for (const f of Object.values(runs)) for (let i = 0; i < 3; i++) await f();
  for (let r = 0; r < ROUNDS; r++) {
    for (const name of shuffle(Object.keys(runs)))
      for (let i = 0; i < 5; i++) await time(`${name} back to back`, runs[name] as () => Promise<unknown>);
    for (const name of shuffle(Object.keys(runs))) {
      await sleep(IDLE_MS);
      await time(`${name} after idle`, runs[name] as () => Promise<unknown>);
    }
  }
} finally {
  await before?.stop();
  await after.stop();
  rmSync(workspace, { recursive: true, force: true });
}
const med = (k: string) => summarize(samples[k] ?? []).medianMs;
console.log(`call-ab: ${ROUNDS} rounds, load ${load0} → ${loadavg()[0]?.toFixed(2)}, idle ${IDLE_MS} ms`);
console.log(
  formatTable(
    ["series", "median ms", "p95 ms", "÷ bare", "÷ before"],
    Object.keys(samples).map((k) => {
      const s = summarize(samples[k] ?? []);
      const kind = k.replace(/^\S+ /, "");
      return [
        k,
        s.medianMs.toFixed(2),
        s.p95Ms.toFixed(2),
        (s.medianMs / med(`bare ${kind}`)).toFixed(3),
        before ? (s.medianMs / med(`before ${kind}`)).toFixed(3) : "",
      ];
    }),
  ),
);
