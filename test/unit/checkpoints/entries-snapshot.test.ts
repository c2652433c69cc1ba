/**
 * Copy mode's checkpoint: the sandbox's copy read from the engine's archive. Hostile archives (names
 * with "..", absolute names, fifos and devices, links to host files) give a manifest of safe paths
 * only, links as text, and nothing stored but the files' own content.
 */
import { createHash } from "node:crypto";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BlobStore } from "../../../src/checkpoints/blob-store.js";
import { DEFAULT_SNAPSHOT_LIMITS, type Manifest } from "../../../src/checkpoints/checkpoint-types.js";
import { takeEntriesSnapshot } from "../../../src/checkpoints/entries-snapshot.js";
import { entriesOf } from "../../../src/sandbox/copy/archive-entries.js";
import { type FixtureEntry, tarOf } from "../sandbox/tar-fixture.js";
import { checkpointDirs } from "./checkpoints-fixture.js";

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const sha = (text: string) => createHash("sha256").update(text).digest("hex");

async function snapshotOfTar(
  entries: FixtureEntry[],
  previous: Manifest = new Map(),
  limits = DEFAULT_SNAPSHOT_LIMITS,
) {
  const d = checkpointDirs();
  made.push(d.base);
  const store = new BlobStore(d.shared, join(d.run, "blobs"));
  return takeEntriesSnapshot({ entries: entriesOf(tarOf(entries), "workspace/"), previous, store, limits });
}

// Every entry carries its own mtime: tar-stream's default is the moment of packing, so two archives
// of the same tree packed either side of a second boundary would differ (CI failed on that once).
const AT = new Date(1_000_000);
const WORKSPACE: FixtureEntry[] = [
  { name: "workspace/", type: "directory", mode: 0o755 },
  { name: "workspace/a.txt", type: "file", mode: 0o644, content: "one\n" },
  { name: "workspace/src/", type: "directory", mode: 0o755 },
  { name: "workspace/src/run.sh", type: "file", mode: 0o4755, content: "#!/bin/sh\n" },
  { name: "workspace/src/again.sh", type: "link", linkname: "workspace/src/run.sh", mode: 0o755 },
  { name: "workspace/passwd", type: "symlink", linkname: "/etc/passwd", mode: 0o777 },
  { name: "workspace/fifo", type: "fifo", mode: 0o644 },
  { name: "workspace/../escape", type: "file", mode: 0o644, content: "out" },
  { name: "/etc/cron.d/x", type: "file", mode: 0o644, content: "abs" },
];
for (const entry of WORKSPACE) entry.mtime = AT;

describe("copy mode's checkpoint from the engine's archive", () => {
  it("records safe paths, links as text and hard links as their file; leaves the rest out", async () => {
    const snap = await snapshotOfTar(WORKSPACE);
    const manifest = snap.manifest as Manifest;
    expect([...manifest.keys()]).toEqual(["a.txt", "src", "src/run.sh", "src/again.sh", "passwd"]);
    expect(manifest.get("a.txt")).toMatchObject({ type: "file", sha256: sha("one\n"), size: 4 });
    expect(manifest.get("src/run.sh")?.mode).toBe(0o755);
    expect(manifest.get("src/again.sh")?.sha256).toBe(sha("#!/bin/sh\n"));
    expect(manifest.get("passwd")).toMatchObject({ type: "symlink", linkname: "/etc/passwd" });
    expect(snap.skipped.map((s) => s.reason)).toEqual(["fifo", "unsafe name", "unsafe name"]);
  });

  it("records nothing when nothing changed, and one path when one file did", async () => {
    const first = await snapshotOfTar(WORKSPACE);
    const same = await snapshotOfTar(WORKSPACE, first.manifest);
    expect(same.delta).toEqual({});
    const changed = WORKSPACE.map((e) => (e.name === "workspace/a.txt" ? { ...e, content: "two\n" } : e));
    const next = await snapshotOfTar(changed, first.manifest);
    expect(Object.keys(next.delta)).toEqual(["a.txt"]);
    expect(next.counts).toEqual({ added: 0, changed: 1, removed: 0 });
  });

  it("gives up with a note past its limits", async () => {
    const snap = await snapshotOfTar(WORKSPACE, new Map(), {
      maxEntries: 100,
      maxReadBytes: 5,
      maxMs: 60_000,
    });
    expect(snap.gaveUp).toBe("more than 5 bytes of files to read");
    expect(snap.manifest).toBeUndefined();
  });
});
