import { createHash } from "node:crypto";
import { existsSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BlobStore } from "../../../src/checkpoints/blob-store.js";
import { changesBetween, formatChanges } from "../../../src/checkpoints/checkpoint-diff.js";
import { blobRelPath } from "../../../src/checkpoints/checkpoint-paths.js";
import type { Manifest } from "../../../src/checkpoints/checkpoint-types.js";
import { prepareTarget, restoreManifest } from "../../../src/checkpoints/restore.js";
import { appendStep, manifestAt, readSteps } from "../../../src/checkpoints/step-log.js";
import { checkpointDirs, snapshotOf } from "./checkpoints-fixture.js";

const dirsMade: string[] = [];
afterEach(() => {
  for (const dir of dirsMade.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function dirs() {
  const made = checkpointDirs();
  dirsMade.push(made.base);
  return made;
}

/** Snapshots after each action, recorded as steps 0..n like a run does. */
async function recordSteps(d: ReturnType<typeof dirs>, actions: (() => void)[]): Promise<void> {
  let previous: Manifest = new Map();
  const store = new BlobStore(d.shared, join(d.run, "blobs"));
  for (const [step, action] of [() => undefined, ...actions].entries()) {
    action();
    const snap = await snapshotOf(d, previous, undefined, store);
    appendStep(d.run, { step, time: "", delta: snap.delta, counts: snap.counts });
    previous = snap.manifest as Manifest;
  }
}

describe("checkpoints of a workspace", () => {
  it("records three steps; diff of step 3 is only a.txt; step 1 restores a.txt as first written", async () => {
    const d = dirs();
    await recordSteps(d, [
      () => writeFileSync(join(d.root, "a.txt"), "one\n"),
      () => writeFileSync(join(d.root, "b.txt"), "bee\n"),
      () => writeFileSync(join(d.root, "a.txt"), "one\ntwo\n"),
    ]);
    const steps = readSteps(d.run);
    expect(steps.map((s) => s.counts)).toEqual([
      { added: 0, changed: 0, removed: 0 },
      { added: 1, changed: 0, removed: 0 },
      { added: 1, changed: 0, removed: 0 },
      { added: 0, changed: 1, removed: 0 },
    ]);
    const changes = changesBetween(manifestAt(steps, 2) as Manifest, manifestAt(steps, 3) as Manifest, d.run);
    expect(changes.map((c) => [c.kind, c.path])).toEqual([["changed", "a.txt"]]);
    expect(formatChanges(changes)).toContain("+two\n");

    const target = join(d.base, "restored");
    await prepareTarget(target);
    await restoreManifest(manifestAt(steps, 1) as Manifest, target, { checkpointsDir: d.run });
    expect(readFileSync(join(target, "a.txt"), "utf8")).toBe("one\n");
    expect(existsSync(join(target, "b.txt"))).toBe(false);
  });

  it("reads a file changed just before it was read once more, then trusts its lstat", async () => {
    const d = dirs();
    writeFileSync(join(d.root, "fresh.txt"), "fresh");
    const first = await snapshotOf(d);
    expect(first.manifest?.get("fresh.txt")?.racy).toBe(true);
    // A write in the same clock tick after the read would not show in lstat: read again.
    const second = await snapshotOf(d, first.manifest);
    expect(second.bytesRead).toBe(5);
    expect(second.counts).toEqual({ added: 0, changed: 0, removed: 0 });
  });

  it("reads no file whose lstat is unchanged, and stores content once across runs", async () => {
    const d = dirs();
    for (let i = 0; i < 50; i++) writeFileSync(join(d.root, `f${i}.txt`), `file ${i % 5}\n`);
    for (let i = 0; i < 50; i++) utimesSync(join(d.root, `f${i}.txt`), 1_000, 1_000);
    await new Promise((resolve) => setTimeout(resolve, 150));
    const first = await snapshotOf(d);
    expect(first.bytesRead).toBeGreaterThan(0);
    const again = await snapshotOf(d, first.manifest);
    expect(again.bytesRead).toBe(0);
    expect(again.delta).toEqual({});
    // A second run over the same files links the shared blobs instead of writing them.
    const secondRun = new BlobStore(d.shared, join(d.base, "runs", "r2.checkpoints", "blobs"));
    await snapshotOf(d, new Map(), undefined, secondRun);
    expect(secondRun.bytesWritten).toBe(0);
  });

  it("sees a rewrite that kept size and mtime (by ctime/inode)", async () => {
    const d = dirs();
    const path = join(d.root, "same.txt");
    writeFileSync(path, "aaaa");
    utimesSync(path, 1_000, 1_000);
    const first = await snapshotOf(d);
    await new Promise((resolve) => setTimeout(resolve, 20));
    writeFileSync(path, "bbbb");
    utimesSync(path, 1_000, 1_000);
    const second = await snapshotOf(d, first.manifest);
    expect(second.counts.changed).toBe(1);
  });

  it("restores modes and symlinks as recorded, refusing a non-empty target", async () => {
    const d = dirs();
    writeFileSync(join(d.root, "run.sh"), "#!/bin/sh\n", { mode: 0o4755 });
    const { symlinkSync, lstatSync, readlinkSync, statSync } = await import("node:fs");
    symlinkSync("/etc/passwd", join(d.root, "host-link"));
    const snap = await snapshotOf(d);
    const target = join(d.base, "out");
    await prepareTarget(target);
    await restoreManifest(snap.manifest as Manifest, target, { checkpointsDir: d.run });
    expect(statSync(join(target, "run.sh")).mode & 0o7777).toBe(0o755);
    expect(lstatSync(join(target, "host-link")).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(target, "host-link"))).toBe("/etc/passwd");
    await expect(prepareTarget(target)).rejects.toThrow(/not empty/);
  });

  it("names the blob it stores by content hash", async () => {
    const d = dirs();
    writeFileSync(join(d.root, "x"), "content");
    const snap = await snapshotOf(d);
    const sha = createHash("sha256").update("content").digest("hex");
    expect(snap.manifest?.get("x")?.sha256).toBe(sha);
    expect(readFileSync(join(d.shared, blobRelPath(sha)), "utf8")).toBe("content");
  });
});
