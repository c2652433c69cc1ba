/**
 * A workspace written by whatever ran in the sandbox: links to host files, fifos, sockets, devices,
 * entries swapped while the snapshot walks, too many files. The snapshot reads nothing outside the
 * workspace, never waits on a fifo, and gives up with a note at its limits.
 */
import { execFileSync, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BlobStore } from "../../../src/checkpoints/blob-store.js";
import { changesBetween, formatChanges } from "../../../src/checkpoints/checkpoint-diff.js";
import type { Manifest } from "../../../src/checkpoints/checkpoint-types.js";
import { prepareTarget, restoreManifest } from "../../../src/checkpoints/restore.js";
import { appendStep, readSteps } from "../../../src/checkpoints/step-log.js";
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

const sha = (content: string | Buffer) => createHash("sha256").update(content).digest("hex");

/** Every blob stored under `dir`, by name. */
function storedBlobs(dir: string): Set<string> {
  const found = new Set<string>();
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(at, entry.name));
      else found.add(entry.name);
    }
  };
  try {
    walk(dir);
  } catch {
    // No blobs at all.
  }
  return found;
}

describe("snapshots of a hostile workspace", () => {
  it("records links to host files as links, and leaves fifos, sockets and devices out without waiting", async () => {
    const d = dirs();
    writeFileSync(join(d.root, "ok.txt"), "ok");
    symlinkSync("/etc/passwd", join(d.root, "passwd"));
    symlinkSync("/etc", join(d.root, "etc"));
    symlinkSync("/dev/zero", join(d.root, "zero"));
    execFileSync("mkfifo", [join(d.root, "fifo")]);
    const server = createServer().listen(join(d.root, "sock"));
    await new Promise((resolve) => server.once("listening", resolve));
    const devices = process.getuid?.() === 0;
    if (devices) execFileSync("mknod", [join(d.root, "null"), "c", "1", "3"]);
    try {
      const snap = await snapshotOf(d);
      const manifest = snap.manifest as Manifest;
      expect(manifest.get("passwd")).toMatchObject({ type: "symlink", linkname: "/etc/passwd" });
      expect(manifest.get("etc")).toMatchObject({ type: "symlink", linkname: "/etc" });
      expect(manifest.get("zero")).toMatchObject({ type: "symlink", linkname: "/dev/zero" });
      expect([...manifest.keys()].filter((path) => path.startsWith("etc/"))).toEqual([]);
      expect(snap.skipped).toEqual(
        expect.arrayContaining([
          { path: "fifo", reason: "fifo" },
          { path: "sock", reason: "socket" },
          ...(devices ? [{ path: "null", reason: "character device" }] : []),
        ]),
      );
      expect(storedBlobs(d.shared)).toEqual(new Set([sha("ok")]));
    } finally {
      server.close();
    }
  });

  it("does not follow a directory swapped for a link to /etc after it was listed", async () => {
    const d = dirs();
    mkdirSync(join(d.root, "d"));
    writeFileSync(join(d.root, "d", "inside"), "inside");
    writeFileSync(join(d.root, "z.txt"), "z");
    // The store is called for z.txt after `d` was seen as a directory and before it is walked.
    class SwappingStore extends BlobStore {
      override put(hash: string, content: Buffer): void {
        if (content.toString() === "z") {
          rmSync(join(d.root, "d"), { recursive: true });
          symlinkSync("/etc", join(d.root, "d"));
        }
        super.put(hash, content);
      }
    }
    const snap = await snapshotOf(d, new Map(), undefined, new SwappingStore(d.shared, join(d.run, "blobs")));
    expect(snap.skipped).toEqual([{ path: "d", reason: "unreadable directory (ELOOP)" }]);
    expect([...(snap.manifest as Manifest).keys()].some((path) => path.startsWith("d/"))).toBe(false);
    expect(storedBlobs(d.shared)).toEqual(new Set([sha("z")]));
  });

  it("never stores a host file while a file is swapped for links and fifos during snapshots", async () => {
    const d = dirs();
    const passwd = readFileSync("/etc/passwd");
    writeFileSync(join(d.root, "f"), "mine\n");
    // A busy swapper: the file, a link to /etc/passwd and a fifo take turns at the same name.
    const swapper = spawn(
      "sh",
      [
        "-c",
        'cd "$1"; while :; do ln -sf /etc/passwd l && mv -f l f; echo mine > t && mv -f t f; rm -f p; mkfifo p && mv -f p f; done',
        "sh",
        d.root,
      ],
      { stdio: "ignore" },
    );
    try {
      let previous: Manifest = new Map();
      for (let i = 0; i < 40; i++) {
        const snap = await snapshotOf(d, previous);
        previous = snap.manifest ?? previous;
        const entry = snap.manifest?.get("f");
        if (entry?.type === "file") expect(entry.sha256).toBe(sha("mine\n"));
      }
    } finally {
      swapper.kill("SIGKILL");
    }
    expect(storedBlobs(d.shared).has(sha(passwd))).toBe(false);
  });

  it("gives up with a note past its entry limit instead of walking on", async () => {
    const d = dirs();
    for (let i = 0; i < 300; i++) writeFileSync(join(d.root, `e${i}`), "");
    const snap = await snapshotOf(d, new Map(), { maxEntries: 100, maxReadBytes: 1024, maxMs: 60_000 });
    expect(snap.gaveUp).toBe("more than 100 files and directories");
    expect(snap.manifest).toBeUndefined();
  });

  it("gives up with a note past its time limit (a stuck file system ends the snapshot, not the run)", async () => {
    const d = dirs();
    for (let i = 0; i < 300; i++) writeFileSync(join(d.root, `e${i}`), "");
    // A deadline already past: the walk stops at its first check.
    const snap = await snapshotOf(d, new Map(), { maxEntries: 1000, maxReadBytes: 1024, maxMs: -1 });
    expect(snap.gaveUp).toMatch(/^the snapshot took longer than/);
  });

  it("gives up with a note past its byte limit", async () => {
    const d = dirs();
    writeFileSync(join(d.root, "big"), Buffer.alloc(4096, 1));
    const snap = await snapshotOf(d, new Map(), { maxEntries: 100, maxReadBytes: 1024, maxMs: 60_000 });
    expect(snap.gaveUp).toBe("more than 1024 bytes of changed files to read");
  });

  it("gives up when the workspace itself was swapped for a link", async () => {
    const d = dirs();
    rmSync(d.root, { recursive: true });
    symlinkSync("/etc", d.root);
    const snap = await snapshotOf(d);
    expect(snap.gaveUp).toMatch(/^the workspace cannot be read/);
    expect(storedBlobs(d.shared).size).toBe(0);
  });

  it("restores nothing through a link the manifest itself holds, and refuses steps naming '..'", async () => {
    const d = dirs();
    const outside = join(d.base, "outside");
    mkdirSync(outside);
    writeFileSync(join(d.root, "x"), "payload");
    const snap = await snapshotOf(d);
    const blob = snap.manifest?.get("x");
    const crafted: Manifest = new Map([
      ["a", { type: "symlink", mode: 0o777, size: 0, mtimeMs: 0, ctimeMs: 0, ino: 1, linkname: outside }],
      ["a/x", blob as NonNullable<typeof blob>],
    ]);
    const target = join(d.base, "target");
    await prepareTarget(target);
    await expect(restoreManifest(crafted, target, { checkpointsDir: d.run })).rejects.toThrow(/symlink/);
    expect(readdirSync(outside)).toEqual([]);

    appendStep(d.run, {
      step: 0,
      time: "",
      delta: { "../escape": blob ?? null },
      counts: { added: 1, changed: 0, removed: 0 },
    });
    expect(() => readSteps(d.run)).toThrow(/unsafe path/);
  });

  it("quotes a name or link target that would forge a line of runs diff's patch", async () => {
    const d = dirs();
    const snap0 = await snapshotOf(d);
    writeFileSync(join(d.root, "a\n+++ evil"), "x\n");
    symlinkSync("t\ndiff --harness a/forged b/forged", join(d.root, "link"));
    const snap1 = await snapshotOf(d, snap0.manifest);
    const patch = formatChanges(
      changesBetween(snap0.manifest as Manifest, snap1.manifest as Manifest, d.run),
    );
    expect(patch.split("\n").filter((line) => line.startsWith("+++ evil"))).toEqual([]);
    expect(patch.split("\n").filter((line) => line.startsWith("diff --harness a/forged"))).toEqual([]);
    expect(patch).toContain('a/"a\\n+++ evil"');
  });
});
