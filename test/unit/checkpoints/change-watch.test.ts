/**
 * Bind mode skips the walk after a step no watched directory reported a change. Every change made
 * before the snapshot is asked for (a file written, a directory made and filled, one replaced, a
 * mode changed) is still seen, and every `maxQuietSteps` steps the walk runs anyway.
 */
import { execFile } from "node:child_process";
import { chmodSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BlobStore } from "../../../src/checkpoints/blob-store.js";
import { ChangeWatch } from "../../../src/checkpoints/change-watch.js";
import { DEFAULT_SNAPSHOT_LIMITS, type Manifest } from "../../../src/checkpoints/checkpoint-types.js";
import { hostSnapshots } from "../../../src/checkpoints/host-snapshot.js";
import { checkpointDirs } from "./checkpoints-fixture.js";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

function setup(maxQuietSteps = 100) {
  const d = checkpointDirs();
  const host = hostSnapshots(d.root, undefined, new ChangeWatch({ maxQuietSteps }));
  cleanups.push(() => {
    host.close();
    rmSync(d.base, { recursive: true, force: true });
  });
  const store = new BlobStore(d.shared, join(d.run, "blobs"));
  let previous: Manifest = new Map();
  /** One step's snapshot, as the run takes it; `walked` says whether it read the tree. */
  const step = async () => {
    const snap = await host.snapshot(previous, store, DEFAULT_SNAPSHOT_LIMITS);
    const walked = snap.manifest !== previous;
    previous = snap.manifest ?? previous;
    return { ...snap, walked };
  };
  return { root: d.root, step };
}

describe("bind mode's change watch", () => {
  it("skips the walk when nothing changed and sees every change made before the next step", async () => {
    const { root, step } = setup();
    mkdirSync(join(root, "src"));
    writeFileSync(join(root, "src", "a.txt"), "one\n");
    expect((await step()).walked).toBe(true);
    expect(await step()).toMatchObject({ walked: false, delta: {} });

    writeFileSync(join(root, "src", "a.txt"), "two\n");
    expect(await step()).toMatchObject({ walked: true, counts: { added: 0, changed: 1, removed: 0 } });

    mkdirSync(join(root, "new"));
    expect((await step()).counts.added).toBe(1);
    writeFileSync(join(root, "new", "b.txt"), "bee\n");
    expect((await step()).counts.added).toBe(1);

    // A directory replaced by another of the same name: the new one is watched too.
    mkdirSync(join(root, "other"));
    writeFileSync(join(root, "other", "c.txt"), "c\n");
    rmSync(join(root, "new"), { recursive: true });
    renameSync(join(root, "other"), join(root, "new"));
    expect((await step()).counts).toEqual({ added: 1, changed: 0, removed: 1 });
    await step();
    writeFileSync(join(root, "new", "c.txt"), "changed\n");
    expect((await step()).counts.changed).toBe(1);

    chmodSync(join(root, "new", "c.txt"), 0o600);
    expect((await step()).counts.changed).toBe(1);
  });

  it("sees what another process changed before it exited, as a command in the sandbox does", async () => {
    const { root, step } = setup();
    writeFileSync(join(root, "a.txt"), "one\n");
    await step();
    await step();
    for (let i = 0; i < 20; i++) {
      await new Promise<void>((resolve, reject) =>
        execFile("sh", ["-c", `echo ${i} > "$1"/a.txt`, "sh", root], (error) =>
          error ? reject(error) : resolve(),
        ),
      );
      expect((await step()).counts.changed).toBe(1);
    }
  });

  it("walks anyway every maxQuietSteps steps", async () => {
    const { root, step } = setup(2);
    writeFileSync(join(root, "a.txt"), "a");
    await step();
    const walked = [];
    for (let i = 0; i < 6; i++) walked.push((await step()).walked);
    expect(walked).toEqual([false, false, true, false, false, true]);
  });
});
