/**
 * Copy mode's checkpoints (issue 34): a workspace of 10,000 files (100 directories of 100 files) in
 * one `--isolation copy` Docker sandbox, and what a checkpoint adds to each tool call, measured the
 * way `harness run` meets it: the call (`sandbox.exec`), then the step's snapshot through the same
 * RunCheckpointer, awaited. Three ways side by side in the same run, against the same sandbox:
 * no checkpoints (`--no-checkpoints`), the engine's archive of the whole copy hashed every step (as
 * before issue 34), and the listing that fetches only what changed (now). Each: steps whose command
 * changed nothing (`true`), and steps that appended one line to one file; median and p95 of the
 * call plus its checkpoint, and bytes read from the sandbox per step.
 *
 *   node --import tsx bench/checkpoint-copy-bench.ts   (env: BENCH_FILES=10000 BENCH_ITERATIONS=20)
 */
import { chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULT_SNAPSHOT_LIMITS } from "../src/checkpoints/checkpoint-types.js";
import { copySnapshots } from "../src/checkpoints/copy-snapshot.js";
import { takeEntriesSnapshot } from "../src/checkpoints/entries-snapshot.js";
import { RunCheckpointer, type SnapshotFn } from "../src/checkpoints/run-checkpointer.js";
import type { Snapshot } from "../src/checkpoints/snapshot.js";
import { DockerSandbox } from "../src/sandbox/docker/docker-sandbox.js";
import { envInt, formatTable, ms, summarize } from "./stats.js";

const FILES = envInt("BENCH_FILES", 10_000);
const ITERATIONS = envInt("BENCH_ITERATIONS", 20);
const PER_DIR = 100;

const base = mkdtempSync(join(tmpdir(), "harness-checkpoint-copy-bench-"));
const root = join(base, "workspace");
for (let i = 0; i < FILES; i++) {
  const dir = join(root, `d${Math.floor(i / PER_DIR)}`);
  if (i % PER_DIR === 0) mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `f${i}.txt`), `${"x".repeat(200 + ((i * 37) % 8000))}\n${i}\n`);
}
// harness never runs the sandbox as root: as root, give the workspace to a normal user.
if (process.getuid?.() === 0) chownSync(root, 1000, 1000);

const sandbox = await DockerSandbox.open({ workspace: root, isolation: "copy" });
try {
  const copy = sandbox.copy;
  if (copy === undefined) throw new Error("checkpoint-copy-bench: no copy");
  const ways: Array<[string, (() => SnapshotFn) | undefined]> = [
    ["--no-checkpoints", undefined],
    [
      "archive of the whole copy (before)",
      () => (previous, store, limits) =>
        takeEntriesSnapshot({ entries: copy.entries(), previous, store, limits }),
    ],
    ["listing, fetch what changed (now)", () => copySnapshots(copy, { gitIgnore: {} })],
  ];
  const rows: string[][] = [];
  for (const [name, make] of ways) {
    let bytesRead = 0;
    const fn = make?.();
    const measured: SnapshotFn | undefined =
      fn === undefined
        ? undefined
        : async (previous, store, limits): Promise<Snapshot> => {
            const snap = await fn(previous, store, limits);
            bytesRead += snap.bytesRead;
            return snap;
          };
    const checkpointer =
      measured === undefined
        ? undefined
        : new RunCheckpointer({
            snapshot: measured,
            checkpointsDir: join(base, "runs", `${name.replace(/\W+/g, "")}.checkpoints`),
            sharedBlobsDir: join(base, "state", name.replace(/\W+/g, "")),
            firstStep: 0,
            previous: new Map(),
            limits: { ...DEFAULT_SNAPSHOT_LIMITS, maxMs: 600_000 },
            onCheckpoint: () => undefined,
            onNotice: (text) => process.stderr.write(`${text}\n`),
          });
    const started = performance.now();
    await checkpointer?.start();
    const firstMs = performance.now() - started;
    const step = async (command: string): Promise<number> => {
      const begin = performance.now();
      const result = await sandbox.exec(command, { timeoutMs: 60_000 });
      if (result.exitCode !== 0)
        throw new Error(`checkpoint-copy-bench: ${command} failed: ${result.stderr}`);
      checkpointer?.afterToolCall({ id: "toolu_bench", name: "bash", input: {} });
      await checkpointer?.settle();
      return performance.now() - begin;
    };
    await step("true");
    await step("true"); // past the racy re-read of files the copy-in had just written
    const unchanged: number[] = [];
    bytesRead = 0;
    for (let i = 0; i < ITERATIONS; i++) unchanged.push(await step("true"));
    const unchangedBytes = bytesRead / ITERATIONS;
    const changed: number[] = [];
    bytesRead = 0;
    for (let i = 0; i < ITERATIONS; i++) changed.push(await step(`echo step ${i} >> d7/f700.txt`));
    const changedBytes = bytesRead / ITERATIONS;
    await checkpointer?.close();
    const u = summarize(unchanged);
    const c = summarize(changed);
    rows.push([
      name,
      checkpointer === undefined ? "-" : ms(firstMs),
      ms(u.medianMs),
      ms(u.p95Ms),
      `${Math.round(unchangedBytes)} B`,
      ms(c.medianMs),
      ms(c.p95Ms),
      `${Math.round(changedBytes)} B`,
    ]);
  }
  process.stdout.write(
    `copy mode, ${FILES} files in ${FILES / PER_DIR} directories, ${ITERATIONS} steps each: a tool call plus its checkpoint\n\n`,
  );
  process.stdout.write(
    `${formatTable(
      ["", "first", "unchanged median", "p95", "read/step", "one file changed median", "p95", "read/step"],
      rows,
    )}\n`,
  );
} finally {
  await sandbox.stop();
  rmSync(base, { recursive: true, force: true });
}
