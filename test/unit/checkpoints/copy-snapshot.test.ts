/**
 * Copy mode's checkpoints at the cost of what changed (issue 34): the real listing program
 * (src/sandbox/copy/listing/workspace-listing.py) run by the host's python3 over a temp directory
 * stands for the sandbox's copy; the engine only carries its stdout. A step fetches only the files
 * whose lstat changed; deletions, renames, a file replaced by a link, a name with a newline and
 * ignored paths land in the right checkpoint; swaps between the listing and the fetch are never
 * followed; what a listing cannot see is caught by the full verification.
 */
import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, renameSync, rmSync, statSync, symlinkSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { BlobStore } from "../../../src/checkpoints/blob-store.js";
import { DEFAULT_SNAPSHOT_LIMITS, type Manifest } from "../../../src/checkpoints/checkpoint-types.js";
import { type CopySnapshotOptions, copySnapshots } from "../../../src/checkpoints/copy-snapshot.js";
import type { Snapshot } from "../../../src/checkpoints/snapshot.js";
import { SandboxError } from "../../../src/errors.js";
import { entriesOf } from "../../../src/sandbox/copy/archive-entries.js";
import {
  fetchFromCopy,
  listCopy,
  parseListing,
  type RunProgram,
} from "../../../src/sandbox/copy/listing/copy-listing.js";
import type { CopiedWorkspace } from "../../../src/sandbox/sandbox.js";
import { tarOf } from "../sandbox/tar-fixture.js";
import { checkpointDirs } from "./checkpoints-fixture.js";

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const sha = (text: string) => createHash("sha256").update(text).digest("hex");

/** The program as the sandbox runs it, here on the host: stdout as a stream, exit 0 checked. */
const runLocally: RunProgram = async (argv) => {
  const child = spawn(argv[0] as string, argv.slice(1), { stdio: ["ignore", "pipe", "pipe"] });
  const stdout = new PassThrough();
  child.stdout.pipe(stdout);
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve));
  return {
    stream: stdout,
    check: async () => {
      const code = await exited;
      if (code !== 0) throw new Error(`listing program exited ${code}: ${stderr}`);
    },
  };
};

type Copy = Pick<CopiedWorkspace, "list" | "fetch">;

/** A copy over `root`, recording what each fetch asked for; `beforeFetch` runs before each fetch. */
function localCopy(root: string, beforeFetch?: (paths: readonly string[]) => void) {
  const fetched: string[][] = [];
  const copy: Copy = {
    list: (prune, max) => listCopy(runLocally, root, prune, max),
    fetch: (paths) => {
      fetched.push([...paths]);
      beforeFetch?.(paths);
      return fetchFromCopy(runLocally, root, paths);
    },
  };
  return { copy, fetched };
}

function setup(
  options: CopySnapshotOptions = { gitIgnore: {} },
  beforeFetch?: (paths: readonly string[]) => void,
) {
  const d = checkpointDirs();
  made.push(d.base);
  const store = new BlobStore(d.shared, join(d.run, "blobs"));
  const { copy, fetched } = localCopy(d.root, beforeFetch);
  const snapshot = copySnapshots(copy, options);
  let previous: Manifest = new Map();
  const step = async (): Promise<Snapshot> => {
    const snap = await snapshot(previous, store, DEFAULT_SNAPSHOT_LIMITS);
    if (snap.manifest !== undefined) previous = snap.manifest;
    return snap;
  };
  return { root: d.root, step, fetched, store, manifest: () => previous };
}

describe("copy mode's checkpoint from a listing", () => {
  it("fetches only the file a step changed, and nothing when nothing changed", async () => {
    const t = setup();
    for (let d = 0; d < 5; d++) {
      mkdirSync(join(t.root, `d${d}`));
      for (let f = 0; f < 10; f++) writeFileSync(join(t.root, `d${d}`, `f${f}.txt`), `file ${d}/${f}\n`);
    }
    const first = await t.step();
    expect(first.counts.added).toBe(55);
    expect(t.fetched.at(-1)).toHaveLength(50);

    writeFileSync(join(t.root, "d3", "f7.txt"), "changed\n");
    const changed = await t.step();
    expect(changed.counts).toEqual({ added: 0, changed: 1, removed: 0 });
    expect(Object.keys(changed.delta)).toContain("d3/f7.txt");
    expect(changed.delta["d3/f7.txt"]).toMatchObject({ type: "file", sha256: sha("changed\n"), size: 8 });
    // Files changed just before the first listing are read again once (racy); then only the change.
    const third = await t.step();
    expect(third.counts).toEqual({ added: 0, changed: 0, removed: 0 });
    writeFileSync(join(t.root, "d1", "f1.txt"), "again\n");
    const fourth = await t.step();
    expect(t.fetched.at(-1)).toEqual(["d1/f1.txt"]);
    expect(fourth.bytesRead).toBe(6);
    expect(fourth.counts).toEqual({ added: 0, changed: 1, removed: 0 });
    const unchanged = await t.step();
    expect(t.fetched.at(-1)).toEqual([]);
    expect(unchanged.delta).toEqual({});
    expect(unchanged.bytesRead).toBe(0);
  });

  it("records a deletion, a rename, a file replaced by a symlink and a name with a newline", async () => {
    const t = setup();
    writeFileSync(join(t.root, "gone.txt"), "gone\n");
    writeFileSync(join(t.root, "old.txt"), "moved\n");
    writeFileSync(join(t.root, "swap.txt"), "a file\n");
    await t.step();
    unlinkSync(join(t.root, "gone.txt"));
    renameSync(join(t.root, "old.txt"), join(t.root, "new.txt"));
    unlinkSync(join(t.root, "swap.txt"));
    symlinkSync("/etc/passwd", join(t.root, "swap.txt"));
    writeFileSync(join(t.root, "two\nlines.txt"), "newline\n");
    const snap = await t.step();
    expect(snap.delta["gone.txt"]).toBeNull();
    expect(snap.delta["old.txt"]).toBeNull();
    expect(snap.delta["new.txt"]).toMatchObject({ type: "file", sha256: sha("moved\n") });
    expect(snap.delta["swap.txt"]).toMatchObject({ type: "symlink", linkname: "/etc/passwd" });
    expect(snap.delta["two\nlines.txt"]).toMatchObject({ type: "file", sha256: sha("newline\n") });
    expect(snap.counts).toEqual({ added: 2, changed: 1, removed: 2 });
  });

  it("leaves ignored paths out and names them; a rule removed brings an unwalked directory back", async () => {
    const t = setup();
    writeFileSync(join(t.root, ".gitignore"), "build/\n*.log\n");
    mkdirSync(join(t.root, "build"));
    writeFileSync(join(t.root, "build", "out.js"), "built\n");
    writeFileSync(join(t.root, "run.log"), "log\n");
    writeFileSync(join(t.root, "src.js"), "src\n");
    const first = await t.step();
    expect([...(first.manifest as Manifest).keys()].sort()).toEqual([".gitignore", "src.js"]);
    expect(first.ignored?.paths).toEqual(["build", "run.log"]);
    expect(t.fetched.flat()).not.toContain("build/out.js");

    writeFileSync(join(t.root, "build", "more.js"), "more\n");
    writeFileSync(join(t.root, "run.log"), "more log\n");
    const quiet = await t.step();
    expect(quiet.counts).toEqual({ added: 0, changed: 0, removed: 0 });

    writeFileSync(join(t.root, ".gitignore"), "*.log\n");
    const back = await t.step();
    expect(back.delta["build/out.js"]).toMatchObject({ sha256: sha("built\n") });
    expect(back.delta["build/more.js"]).toMatchObject({ sha256: sha("more\n") });
    expect(back.ignored?.paths).toEqual(["run.log"]);
  });

  it("keeps everything with --checkpoints all", async () => {
    const t = setup({});
    writeFileSync(join(t.root, ".gitignore"), "*.log\n");
    writeFileSync(join(t.root, "run.log"), "log\n");
    const snap = await t.step();
    expect((snap.manifest as Manifest).has("run.log")).toBe(true);
    expect(snap.ignored).toBeUndefined();
  });

  it("catches a rewrite that put back the size and the mtime (touch -d): its ctime moved", async () => {
    // No racy window: the file's lstat is trusted from the first listing on, so only ctime can tell.
    const t = setup({ gitIgnore: {}, racyMs: 0 });
    const file = join(t.root, "same.txt");
    writeFileSync(file, "aaaa\n");
    await t.step();
    await t.step();
    expect(t.fetched.at(-1)).toEqual([]);
    const before = statSync(file, { bigint: true });
    writeFileSync(file, "bbbb\n");
    const ns = before.mtimeNs % 1_000_000_000n;
    const at = `@${before.mtimeNs / 1_000_000_000n}.${ns.toString().padStart(9, "0")}`;
    const touch = spawn("touch", ["-m", "-d", at, file]);
    await new Promise((resolve) => touch.on("close", resolve));
    const after = statSync(file, { bigint: true });
    expect([after.mtimeNs, after.size]).toEqual([before.mtimeNs, before.size]);
    const snap = await t.step();
    expect(t.fetched.at(-1)).toEqual(["same.txt"]);
    expect(snap.delta["same.txt"]).toMatchObject({ sha256: sha("bbbb\n") });
  });

  it("the full verification catches a change the listing did not show", async () => {
    const d = checkpointDirs();
    made.push(d.base);
    const store = new BlobStore(d.shared, join(d.run, "blobs"));
    const { copy } = localCopy(d.root);
    let stale: Awaited<ReturnType<Copy["list"]>> | undefined;
    // A listing that shows the file as it was (what a write the clock did not see looks like).
    const blind: Copy = {
      list: async (prune, max) => {
        const listing = await copy.list(prune, max);
        if (stale === undefined) return listing;
        return { ...listing, paths: stale.paths };
      },
      fetch: (paths) => copy.fetch(paths),
    };
    const snapshot = copySnapshots(blind, { gitIgnore: {}, verifyEvery: 3 });
    writeFileSync(join(d.root, "hidden.txt"), "one\n");
    let previous = (await snapshot(new Map(), store, DEFAULT_SNAPSHOT_LIMITS)).manifest as Manifest;
    previous = (await snapshot(previous, store, DEFAULT_SNAPSHOT_LIMITS)).manifest as Manifest;
    stale = await copy.list([], 100);
    writeFileSync(join(d.root, "hidden.txt"), "two\n");
    const missed = await snapshot(previous, store, DEFAULT_SNAPSHOT_LIMITS);
    expect(missed.delta).toEqual({});
    const verified = await snapshot(missed.manifest as Manifest, store, DEFAULT_SNAPSHOT_LIMITS);
    expect(verified.delta["hidden.txt"]).toMatchObject({ sha256: sha("two\n") });
  });

  it("never follows a file or a directory swapped for a link between the listing and the fetch", async () => {
    const d = checkpointDirs();
    made.push(d.base);
    const outside = join(d.base, "outside");
    mkdirSync(outside);
    writeFileSync(join(outside, "f.txt"), "SECRET\n");
    writeFileSync(join(outside, "g.txt"), "SECRET\n");
    let swap = false;
    const { copy } = localCopy(d.root, () => {
      if (!swap) return;
      renameSync(join(d.root, "dir"), join(d.base, "dir-away"));
      symlinkSync(outside, join(d.root, "dir"));
      unlinkSync(join(d.root, "g.txt"));
      symlinkSync(join(outside, "g.txt"), join(d.root, "g.txt"));
    });
    const store = new BlobStore(d.shared, join(d.run, "blobs"));
    const snapshot = copySnapshots(copy, { gitIgnore: {} });
    mkdirSync(join(d.root, "dir"));
    writeFileSync(join(d.root, "dir", "f.txt"), "mine\n");
    writeFileSync(join(d.root, "g.txt"), "mine\n");
    const first = await snapshot(new Map(), store, DEFAULT_SNAPSHOT_LIMITS);
    writeFileSync(join(d.root, "dir", "f.txt"), "mine, changed\n");
    writeFileSync(join(d.root, "g.txt"), "mine, changed\n");
    swap = true;
    const snap = await snapshot(first.manifest as Manifest, store, DEFAULT_SNAPSHOT_LIMITS);
    const manifest = snap.manifest as Manifest;
    expect(manifest.get("dir/f.txt")?.sha256).toBe(sha("mine\n"));
    expect(manifest.get("g.txt")?.sha256).toBe(sha("mine\n"));
    expect(snap.skipped.map((s) => s.path).sort()).toEqual(["dir/f.txt", "g.txt"]);
    for (const entry of manifest.values()) expect(entry.sha256).not.toBe(sha("SECRET\n"));
    swap = false;
    const next = await snapshot(manifest, store, DEFAULT_SNAPSHOT_LIMITS);
    expect(next.delta["dir"]).toMatchObject({ type: "symlink", linkname: outside });
    expect(next.delta["dir/f.txt"]).toBeNull();
    expect(next.delta["g.txt"]).toMatchObject({ type: "symlink" });
  });

  it("names fifos and unsafe names without reading them; a cut-short listing is refused", async () => {
    const t = setup();
    writeFileSync(join(t.root, "back\\slash"), "x\n");
    writeFileSync(join(t.root, "ok.txt"), "ok\n");
    const mkfifo = spawn("mkfifo", [join(t.root, "pipe")]);
    await new Promise((resolve) => mkfifo.on("close", resolve));
    const snap = await t.step();
    expect([...(snap.manifest as Manifest).keys()]).toEqual(["ok.txt"]);
    expect(snap.skipped).toEqual(
      expect.arrayContaining([
        { path: "back\\slash", reason: "unsafe name" },
        { path: "pipe", reason: "fifo" },
      ]),
    );
    const fields = (...parts: string[]) => Buffer.from(parts.map((p) => `${p}\u0000`).join(""));
    const record = ["f", "a", "420", "3", "1", "1", "1", ""];
    expect(() => parseListing(fields("H", "1", ...record))).toThrow(/cut short/);
    expect(parseListing(fields("H", "1", ...record, "E", "ok")).paths).toHaveLength(1);
    expect(() => parseListing(fields("H", "1", "f", "a", "-1", "3", "1", "1", "1", "", "E", "ok"))).toThrow(
      /not a number/,
    );
  });

  it("reads the engine's archive, as before, when the image cannot run the listing (no python3)", async () => {
    const d = checkpointDirs();
    made.push(d.base);
    const store = new BlobStore(d.shared, join(d.run, "blobs"));
    const at = new Date(1_000_000);
    const noPython: Copy & Pick<CopiedWorkspace, "entries"> = {
      list: () => Promise.reject(new SandboxError("reading the sandbox's workspace failed (exit 127)")),
      fetch: () => {
        throw new Error("never asked");
      },
      entries: () =>
        entriesOf(
          tarOf([
            { name: "workspace/", type: "directory", mode: 0o755, mtime: at },
            { name: "workspace/a.txt", type: "file", mode: 0o644, content: "one\n", mtime: at },
          ]),
          "workspace/",
        ),
    };
    const snapshot = copySnapshots(noPython, { gitIgnore: {} });
    const first = await snapshot(new Map(), store, DEFAULT_SNAPSHOT_LIMITS);
    expect(first.gaveUp).toBeUndefined();
    expect((first.manifest as Manifest).get("a.txt")?.sha256).toBe(sha("one\n"));
    const second = await snapshot(first.manifest as Manifest, store, DEFAULT_SNAPSHOT_LIMITS);
    expect(second.delta).toEqual({});
  });
});
