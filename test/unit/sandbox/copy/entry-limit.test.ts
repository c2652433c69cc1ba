import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pack } from "tar-stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadSandboxConfig } from "../../../../src/config.js";
import { ConfigError, SandboxError } from "../../../../src/errors.js";
import { renderDiffs } from "../../../../src/sandbox/copy/change-report.js";
import { readSandboxTree } from "../../../../src/sandbox/copy/sandbox-tree.js";
import { planWorkspaceCopy } from "../../../../src/sandbox/copy/workspace-archive.js";
import { scanWorkspace } from "../../../../src/sandbox/copy/workspace-scan.js";
import { strictExtract } from "../../../../src/sandbox/host/extract/strict-extract.js";
import { SANDBOX_DEFAULTS } from "../../../../src/sandbox/sandbox-request.js";

/**
 * Copy mode bounds entries, not only bytes: a task that creates hundreds of thousands of empty
 * files costs no bytes, but every entry costs the host time and memory to read back. Each reader
 * stops as soon as the count passes the limit, and says which flag raises it.
 */

/**
 * An archive like the engine's of `count` empty files under "workspace/", made only as fast as it
 * is read; `produced()` tells how many entries the reader pulled before it let go.
 */
function lazyArchive(count: number): { source: Readable; produced: () => number } {
  const p = pack();
  let made = 0;
  let finalized = false;
  const source = new Readable({
    read() {
      if (made === 0) p.entry({ name: "workspace/", type: "directory", mode: 0o755 });
      if (made < count) p.entry({ name: `workspace/f${made++}`, mode: 0o644 }, "");
      else if (!finalized) {
        finalized = true;
        p.finalize();
      }
    },
  });
  p.on("data", (data: unknown) => source.push(data));
  p.on("end", () => source.push(null));
  return { source, produced: () => made };
}

const treeOptions = (maxEntries: number) => ({
  stripPrefix: "workspace/",
  maxTotalBytes: 1_000_000,
  maxEntries,
  host: new Map(),
  keepFileBytes: 100,
  keepTotalBytes: 1000,
});

let ws: string;
beforeEach(() => {
  ws = mkdtempSync(join(tmpdir(), "harness-entries-"));
});
afterEach(() => {
  rmSync(ws, { recursive: true, force: true });
});

function makeFiles(dir: string, count: number): void {
  mkdirSync(dir, { recursive: true });
  for (let i = 0; i < count; i++) writeFileSync(join(dir, `f${i}`), "");
}

describe("copy in: the workspace scan counts entries", () => {
  it("refuses a workspace with more files, directories and symlinks than the limit", async () => {
    makeFiles(join(ws, "a"), 30);
    makeFiles(join(ws, "b"), 30);
    const scan = scanWorkspace(ws, () => false, 50);
    await expect(scan).rejects.toThrow(ConfigError);
    await expect(scanWorkspace(ws, () => false, 50)).rejects.toThrow(
      /more than 50 files, directories and symlinks.*--copy-max-files/,
    );
  });

  it("takes a workspace with exactly the limit, and does not count what is ignored", async () => {
    makeFiles(join(ws, "a"), 9);
    makeFiles(join(ws, "node_modules"), 100);
    const ignored = (path: string) => path === "node_modules";
    expect((await scanWorkspace(ws, ignored, 10)).entries).toHaveLength(10);
    await expect(scanWorkspace(ws, () => false, 10)).rejects.toThrow(ConfigError);
  });

  it("stops listing a huge directory once the count passes the limit", async () => {
    makeFiles(join(ws, "many"), 3000);
    // The matcher is asked about every name the scan looks at.
    let looked = 0;
    const counting = () => {
      looked++;
      return false;
    };
    await expect(scanWorkspace(ws, counting, 10)).rejects.toThrow(ConfigError);
    expect(looked).toBe(11);
  });

  it("planWorkspaceCopy refuses before any container exists, naming the flag", async () => {
    makeFiles(ws, 20);
    await expect(planWorkspaceCopy(ws, 1024 ** 3, 10)).rejects.toThrow(/--copy-max-files/);
    expect((await planWorkspaceCopy(ws, 1024 ** 3, 20)).scan.entries).toHaveLength(20);
  });
});

describe("copy out: reading the sandbox's archive counts entries", () => {
  it("readSandboxTree stops reading once the count passes the limit and lets go of the stream", async () => {
    const { source, produced } = lazyArchive(5000);
    const read = readSandboxTree(source, treeOptions(1000));
    await expect(read).rejects.toThrow(SandboxError);
    await expect(read).rejects.toThrow(/more than 1000 files, directories and symlinks.*--copy-max-files/);
    expect(source.destroyed).toBe(true);
    // Not read to the end: only what the streams buffer past the limit was made.
    expect(produced()).toBeLessThan(2000);
  });

  it("readSandboxTree reads exactly the limit; the root entry does not count", async () => {
    const { source } = lazyArchive(1000);
    const { tree } = await readSandboxTree(source, treeOptions(1000));
    expect(tree.size).toBe(1000);
  });

  it("names that are not safe paths count too", async () => {
    const p = pack();
    for (let i = 0; i < 50; i++) p.entry({ name: `workspace/../evil${i}` }, "");
    p.finalize();
    await expect(readSandboxTree(Readable.from(p), treeOptions(10))).rejects.toThrow(/--copy-max-files/);
  });

  it("long paths count too: names and link targets are held per entry, so their length is bounded", async () => {
    // Each path is held in the tree, the changes and the summary: 100 entries of 3,000 characters
    // are as many characters as 600 entries of 500.
    const deep = `${"d".repeat(250)}/`.repeat(12);
    const p = pack();
    for (let i = 0; i < 100; i++) p.entry({ name: `workspace/${deep}f${i}` }, "");
    p.finalize();
    await expect(readSandboxTree(Readable.from(p), treeOptions(100))).rejects.toThrow(
      /paths of more than 51200 characters.*--copy-max-files/,
    );
    const links = pack();
    for (let i = 0; i < 100; i++) {
      links.entry({ name: `workspace/l${i}`, type: "symlink", linkname: "x".repeat(3000) });
    }
    links.finalize();
    await expect(readSandboxTree(Readable.from(links), treeOptions(100))).rejects.toThrow(/--copy-max-files/);
    // Ordinary lengths are far from it.
    const { source } = lazyArchive(100);
    expect((await readSandboxTree(source, treeOptions(100))).tree.size).toBe(100);
  });

  it("strictExtract stops reading once the count passes the limit and lets go of the stream", async () => {
    const { source, produced } = lazyArchive(5000);
    const extract = strictExtract(source, { root: ws, stripPrefix: "workspace/", maxEntries: 1000 });
    await expect(extract).rejects.toThrow(SandboxError);
    expect(source.destroyed).toBe(true);
    expect(produced()).toBeLessThan(2000);
  });
});

describe("copy out: memory per entry", () => {
  it("keeps no content for empty files, and still shows them as empty in the diff", async () => {
    const { source } = lazyArchive(100);
    const { tree, contents } = await readSandboxTree(source, treeOptions(1000));
    expect(tree.size).toBe(100);
    expect(contents.size).toBe(0);
    const after = tree.get("f0");
    const diff = await renderDiffs([{ kind: "A", path: "f0", differs: [], after }], ws, contents);
    expect(diff).toBe("--- /dev/null\n+++ b/f0\n(empty file)\n");
  });

  it("keeps content for at most keepFiles changed files, however small", async () => {
    const p = pack();
    for (let i = 0; i < 20; i++) p.entry({ name: `workspace/f${i}` }, "x");
    p.finalize();
    const { contents } = await readSandboxTree(Readable.from(p), { ...treeOptions(1000), keepFiles: 5 });
    expect(contents.size).toBe(5);
  });
});

describe("--copy-max-files", () => {
  it("is a positive whole number, flags only, with a default", () => {
    expect(loadSandboxConfig({}, { workspace: "/w", copyMaxFiles: "5000" }).copyMaxFiles).toBe(5000);
    expect(loadSandboxConfig({ HARNESS_COPY_MAX_FILES: "5" }, { workspace: "/w" }).copyMaxFiles).toBe(
      undefined,
    );
    expect(() => loadSandboxConfig({}, { workspace: "/w", copyMaxFiles: "0" })).toThrow(/--copy-max-files/);
    expect(() => loadSandboxConfig({}, { workspace: "/w", copyMaxFiles: "1.5" })).toThrow(/--copy-max-files/);
    expect(SANDBOX_DEFAULTS.copyMaxFiles).toBe(100_000);
  });
});
