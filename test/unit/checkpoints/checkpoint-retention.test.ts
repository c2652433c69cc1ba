/**
 * Checkpoints are kept and pruned with their run: a run's size counts its blobs shared among the runs
 * holding them, pruning a run removes its checkpoints, and blobs no run holds any more are swept
 * while those another run holds stay.
 */
import { existsSync, mkdirSync, readdirSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { BlobStore } from "../../../src/checkpoints/blob-store.js";
import { blobRelPath, checkpointsDirOf, sharedBlobsDir } from "../../../src/checkpoints/checkpoint-paths.js";
import { DEFAULT_SNAPSHOT_LIMITS } from "../../../src/checkpoints/checkpoint-types.js";
import { takeSnapshot } from "../../../src/checkpoints/snapshot.js";
import { appendStep } from "../../../src/checkpoints/step-log.js";
import { pruneRuns } from "../../../src/runs/retention.js";
import { scanRunsDir } from "../../../src/runs/run-files.js";
import { makeStateHome, runIdAt, writeRun } from "../../support/run-fixtures.js";

const DAY = 86_400_000;
const NOW = Date.now();

/** Sets every file and directory under `dir` to `ms`. */
function age(dir: string, ms: number): void {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) age(path, ms);
    utimesSync(path, ms / 1000, ms / 1000);
  }
  utimesSync(dir, ms / 1000, ms / 1000);
}

describe("checkpoints in retention", () => {
  it("share blob bytes among runs, go with their run, and leave no blob no run holds", async () => {
    using state = makeStateHome();
    const workspace = join(state.home, "workspace");
    mkdirSync(workspace);
    const shared = sharedBlobsDir(state.env);
    const checkpoint = async (id: string, startMs: number) => {
      const { transcript } = writeRun(state.runs, id, { startMs, mtimeMs: startMs });
      const dir = checkpointsDirOf(transcript);
      const store = new BlobStore(shared, join(dir, "blobs"));
      const snap = await takeSnapshot({
        root: workspace,
        previous: new Map(),
        store,
        limits: DEFAULT_SNAPSHOT_LIMITS,
      });
      appendStep(dir, { step: 0, time: "", delta: snap.delta, counts: snap.counts });
      return { dir, snap };
    };
    writeFileSync(join(workspace, "both.txt"), Buffer.alloc(1000, 0x61));
    writeFileSync(join(workspace, "old-only.txt"), Buffer.alloc(500, 0x62));
    const oldId = runIdAt(NOW - 40 * DAY);
    const old = await checkpoint(oldId, NOW - 40 * DAY);
    age(old.dir, NOW - 40 * DAY);
    const { rmSync } = await import("node:fs");
    rmSync(join(workspace, "old-only.txt"));
    const newId = runIdAt(NOW - DAY);
    await checkpoint(newId, NOW - DAY);
    const both = old.snap.manifest?.get("both.txt")?.sha256 as string;
    const oldOnly = old.snap.manifest?.get("old-only.txt")?.sha256 as string;

    const before = scanRunsDir(state.runs).runs;
    const sizeOf = (id: string) => before.find((run) => run.id === id)?.checkpointsBytes ?? 0;
    const stepsBytes = (id: string) => statSync(join(state.runs, `${id}.checkpoints`, "steps.jsonl")).size;
    // both.txt is held by two runs: half each; old-only.txt by one.
    expect(sizeOf(oldId) - stepsBytes(oldId)).toBe(500 + 500);
    expect(sizeOf(newId) - stepsBytes(newId)).toBe(500);

    const report = pruneRuns(state.runs, { maxBytes: undefined, maxAgeMs: 30 * DAY }, { now: NOW });
    expect(report.removed.map((action) => action.id)).toEqual([oldId]);
    expect(existsSync(join(state.runs, `${oldId}.checkpoints`))).toBe(false);
    expect(existsSync(join(shared, blobRelPath(oldOnly)))).toBe(false);
    expect(existsSync(join(shared, blobRelPath(both)))).toBe(true);
    expect(scanRunsDir(state.runs).runs.find((run) => run.id === newId)?.checkpointsBytes).toBe(
      1000 + stepsBytes(newId),
    );
  });
});
