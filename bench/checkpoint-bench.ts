/**
 * Checkpoint benchmark: a workspace of 10,000 files (100 directories of 100 files, 200 B to 8 KiB) in
 * a temporary directory, then what a checkpoint adds to each tool call, measured through the same
 * RunCheckpointer `harness run` uses: the first snapshot (every file read and stored), a step when
 * the command changed nothing, a step when it changed one file, and the bytes stored per step
 * (steps.jsonl line plus new blobs). Also the first snapshot of a second run over the same files
 * (blobs linked from the shared store, none written). Aim: a few ms when nothing changed.
 * A step's time is the snapshot's whole cost; in a run it overlaps the next model request, so it
 * delays the run only when the next command is ready sooner (several calls in one response). A step
 * after which no watched directory reported a change skips the walk, except every 10th (the max).
 *   node --import tsx bench/checkpoint-bench.ts   (env: BENCH_FILES=10000 BENCH_ITERATIONS=30)
 */
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { STEPS_FILE } from "../src/checkpoints/checkpoint-paths.js";
import { DEFAULT_SNAPSHOT_LIMITS } from "../src/checkpoints/checkpoint-types.js";
import { hostSnapshots } from "../src/checkpoints/host-snapshot.js";
import { RunCheckpointer, type SnapshotFn } from "../src/checkpoints/run-checkpointer.js";
import { takeSnapshot } from "../src/checkpoints/snapshot.js";
import { envInt, formatTable, ms, type Summary, summarize } from "./stats.js";
import { storedBytes } from "./stored-bytes.js";

const FILES = envInt("BENCH_FILES", 10_000);
const ITERATIONS = envInt("BENCH_ITERATIONS", 30);
const PER_DIR = 100;

const base = mkdtempSync(join(tmpdir(), "harness-checkpoint-bench-"));
const root = join(base, "workspace");
const shared = join(base, "state", "checkpoints", "blobs");

/** As `harness run` builds it in bind mode; `watched: false` walks at every step. */
function checkpointer(run: string, watched = true): RunCheckpointer {
  const walk: SnapshotFn = (previous, store, limits) => takeSnapshot({ root, previous, store, limits });
  return new RunCheckpointer({
    snapshot: watched ? hostSnapshots(root).snapshot : walk,
    checkpointsDir: join(base, "runs", `${run}.checkpoints`),
    sharedBlobsDir: shared,
    firstStep: 0,
    previous: new Map(),
    limits: DEFAULT_SNAPSHOT_LIMITS,
    onCheckpoint: () => undefined,
    onNotice: (text) => process.stderr.write(`${text}\n`),
  });
}

async function timed(action: () => Promise<void>): Promise<number> {
  const start = performance.now();
  await action();
  return performance.now() - start;
}

try {
  for (let i = 0; i < FILES; i++) {
    const dir = join(root, `d${Math.floor(i / PER_DIR)}`);
    if (i % PER_DIR === 0) mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, `f${i}.txt`), `${"x".repeat(200 + ((i * 37) % 8000))}\n${i}\n`);
  }
  const all = () => storedBytes([join(base, "runs"), join(base, "state")]);
  const steps = () => lstatSync(join(base, "runs", "first.checkpoints", STEPS_FILE)).size;
  const call = { id: "toolu_bench", name: "bash", input: {} };

  const first = checkpointer("first");
  const firstMs = await timed(() => first.start());
  const firstBytes = all();

  const unchanged: number[] = [];
  let before = all();
  const step = async () => {
    first.afterToolCall(call);
    await first.settle();
  };
  for (let i = 0; i < ITERATIONS; i++) unchanged.push(await timed(step));
  const unchangedBytes = (all() - before) / ITERATIONS;

  const oneChanged: number[] = [];
  before = all();
  for (let i = 0; i < ITERATIONS; i++) {
    writeFileSync(join(root, "d7", "f700.txt"), `changed ${i}\n`);
    oneChanged.push(await timed(step));
  }
  const changedBytes = (all() - before) / ITERATIONS;

  const secondRunMs = await timed(() => checkpointer("second").start());
  const rows: Array<[string, Summary, string]> = [
    ["first snapshot (every file read)", summarize([firstMs]), `${(firstBytes / 1024 ** 2).toFixed(1)} MiB`],
    ["step, nothing changed", summarize(unchanged), `${unchangedBytes.toFixed(0)} B`],
    ["step, one file changed", summarize(oneChanged), `${changedBytes.toFixed(0)} B`],
    ["second run's first snapshot (shared blobs)", summarize([secondRunMs]), "-"],
  ];
  process.stdout.write(
    `checkpoints of ${FILES} files in ${FILES / PER_DIR} directories, ${ITERATIONS} steps each; steps.jsonl ${steps()} B\n\n`,
  );
  process.stdout.write(
    `${formatTable(
      ["", "median", "mean", "p90", "max", "stored per step"],
      rows.map(([name, s, bytes]) => [name, ms(s.medianMs), ms(s.meanMs), ms(s.p90Ms), ms(s.maxMs), bytes]),
    )}\n`,
  );
} finally {
  rmSync(base, { recursive: true, force: true });
}
