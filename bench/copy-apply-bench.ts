/**
 * Copy mode's apply on the issue-32 case: a task rewrites REWRITTEN files and adds ADDED (1 KiB
 * each); times `applyChanges` alone (the review before it is not counted), RUNS times, each in a
 * fresh workspace and sandbox, and prints the median and every run in milliseconds.
 *
 *   node --import tsx bench/copy-apply-bench.ts [ADDED] [REWRITTEN] [RUNS]
 */
import { chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DockerSandbox } from "../src/sandbox/docker/docker-sandbox.js";

const added = Number(process.argv[2] ?? 1500);
const rewritten = Number(process.argv[3] ?? 400);
const runs = Number(process.argv[4] ?? 5);
const stateHome = mkdtempSync(join(tmpdir(), "harness-bench-state-"));
process.env["XDG_STATE_HOME"] = stateHome;

async function once(): Promise<number> {
  const workspace = mkdtempSync(join(tmpdir(), "harness-bench-apply-"));
  mkdirSync(join(workspace, "old"));
  for (let i = 1; i <= rewritten; i++) writeFileSync(join(workspace, "old", `f${i}`), "o".repeat(1024));
  // harness never runs the sandbox as root: as root, give the workspace to a normal user.
  if (process.getuid?.() === 0) {
    chownSync(workspace, 1000, 1000);
    chownSync(join(workspace, "old"), 1000, 1000);
    for (let i = 1; i <= rewritten; i++) chownSync(join(workspace, "old", `f${i}`), 1000, 1000);
  }
  const sandbox = await DockerSandbox.open({ workspace, isolation: "copy" });
  try {
    const kib = "head -c 1024 /dev/urandom";
    const task = `for i in $(seq 1 ${rewritten}); do ${kib} > old/f$i; done; mkdir new; for i in $(seq 1 ${added}); do ${kib} > new/n$i; done; echo made`;
    const made = await sandbox.exec(task, { timeoutMs: 600_000 });
    if (made.stdout !== "made\n") throw new Error(`copy-apply-bench: the task failed: ${made.stderr}`);
    const copy = sandbox.copy;
    if (!copy) throw new Error("copy-apply-bench: no copy");
    const changes = await copy.exportChanges();
    const started = performance.now();
    const result = await copy.applyChanges(changes);
    const elapsed = performance.now() - started;
    if (result.written.length !== added + rewritten + 1)
      throw new Error(`copy-apply-bench: ${result.written.length} written, ${result.refused.length} refused`);
    return elapsed;
  } finally {
    await sandbox.stop();
    rmSync(workspace, { recursive: true, force: true });
  }
}

const times: number[] = [];
for (let i = 0; i < runs; i++) times.push(await once());
rmSync(stateHome, { recursive: true, force: true });
const sorted = [...times].sort((a, b) => a - b);
console.log(
  JSON.stringify({
    added,
    rewritten,
    medianMs: Math.round(sorted[Math.floor(sorted.length / 2)] ?? 0),
    runsMs: times.map(Math.round),
  }),
);
