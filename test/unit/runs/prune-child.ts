/**
 * Prunes in a process of its own and prints what happened as JSON: for two prunes racing, and for a
 * prune as a user who cannot write the state directory.
 *   node --import tsx prune-child.ts <runsDir> <limitsJson> <nowMs>   → the PruneReport
 *   node --import tsx prune-child.ts --after-run <transcriptPath>     → the warnings of pruneAfterRun
 */
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pruneAfterRun, pruneRuns } from "../../../src/runs/retention.js";

// PRUNE_BARRIER=<dir> PRUNE_PARTIES=<n>: wait until n children are ready, so their prunes overlap.
const barrier = process.env["PRUNE_BARRIER"];
if (barrier) {
  writeFileSync(join(barrier, String(process.pid)), "");
  const deadline = Date.now() + 30_000;
  while (readdirSync(barrier).length < Number(process.env["PRUNE_PARTIES"] ?? 2) && Date.now() < deadline)
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2);
}

const args = process.argv.slice(2);
if (args[0] === "--after-run") {
  const warnings: string[] = [];
  pruneAfterRun({ transcriptPath: args[1] ?? "", warn: (line) => warnings.push(line) });
  process.stdout.write(JSON.stringify({ warnings }));
} else {
  const [dir = "", limits = "{}", now = String(Date.now())] = args;
  process.stdout.write(
    JSON.stringify(pruneRuns(dir, JSON.parse(limits), { now: Number(now), isAlive: () => false })),
  );
}
