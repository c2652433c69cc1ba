/** The end-of-run sweep: set-id bits off regular files in the workspace, and nothing else touched. */
import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { describeSetIdFiles, stripSetIdBits } from "../../../../src/sandbox/host/strip-set-id.js";

let root: string;
let outside: string;
const mode = (path: string) => statSync(path).mode & 0o7777;

function file(path: string, bits: number): string {
  mkdirSync(join(path, ".."), { recursive: true });
  writeFileSync(path, "#!/bin/sh\n");
  chmodSync(path, bits);
  return path;
}

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), "harness-setid-"));
  outside = mkdtempSync(join(tmpdir(), "harness-setid-outside-"));
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
  rmSync(outside, { recursive: true, force: true });
});

describe("stripSetIdBits", () => {
  it("removes setuid and setgid from regular files at any depth and keeps the other bits", async () => {
    file(join(root, "a"), 0o4755);
    file(join(root, "deep/er/b"), 0o2711);
    file(join(root, "c"), 0o6750);
    file(join(root, ".git/hooks/d"), 0o4000);
    file(join(root, "plain"), 0o755);
    const found = await stripSetIdBits(root);
    expect(found).toEqual([
      { path: ".git/hooks/d", mode: 0o4000 },
      { path: "a", mode: 0o4755 },
      { path: "c", mode: 0o6750 },
      { path: "deep/er/b", mode: 0o2711 },
    ]);
    expect([mode(join(root, "a")), mode(join(root, "deep/er/b")), mode(join(root, "c"))]).toEqual([
      0o755, 0o711, 0o750,
    ]);
    expect(mode(join(root, ".git/hooks/d"))).toBe(0);
    expect(mode(join(root, "plain"))).toBe(0o755);
    expect(describeSetIdFiles(found)).toEqual([
      "removed the setuid bit from .git/hooks/d",
      "removed the setuid bit from a",
      "removed the setuid and setgid bits from c",
      "removed the setgid bit from deep/er/b",
    ]);
    expect(await stripSetIdBits(root)).toEqual([]);
  });

  it("follows no symlink, to a file or a directory, and leaves directories and fifos alone", async () => {
    const hostFile = file(join(outside, "host-setuid"), 0o4755);
    file(join(outside, "dir/inner"), 0o4755);
    symlinkSync(hostFile, join(root, "link-to-file"));
    symlinkSync(join(outside, "dir"), join(root, "link-to-dir"));
    mkdirSync(join(root, "shared"));
    chmodSync(join(root, "shared"), 0o2775);
    execFileSync("mkfifo", [join(root, "fifo")]);
    chmodSync(join(root, "fifo"), 0o4644);
    expect(await stripSetIdBits(root)).toEqual([]);
    expect(mode(hostFile)).toBe(0o4755);
    expect(mode(join(outside, "dir/inner"))).toBe(0o4755);
    expect(mode(join(root, "shared"))).toBe(0o2775);
    expect(mode(join(root, "fifo"))).toBe(0o4644);
  });

  it("takes the workspace through a symlinked path and reports paths relative to it", async () => {
    file(join(root, "x"), 0o4755);
    symlinkSync(root, join(outside, "ws-link"));
    expect(await stripSetIdBits(join(outside, "ws-link"))).toEqual([{ path: "x", mode: 0o4755 }]);
    expect(mode(join(root, "x"))).toBe(0o755);
  });

  it("says when a bit could not be removed", () => {
    expect(describeSetIdFiles([{ path: "x", mode: 0o4755, error: "EACCES" }])).toEqual([
      "could not remove the setuid bit from x (EACCES): do not run it",
    ]);
  });
});
