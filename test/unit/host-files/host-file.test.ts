import { execFileSync } from "node:child_process";
import {
  linkSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openHostFile, writeHostFile } from "../../../src/host-files/host-file.js";
import {
  type HostDir,
  HostPathError,
  markSandboxWritable,
  openHostDir,
} from "../../../src/host-files/host-path.js";

const VICTIM = "root only\n";
let root: string;
let ws: string;
let victim: string;
let dir: HostDir;
beforeEach(() => {
  root = realpathSync(mkdtempSync(join(tmpdir(), "harness-hostfile-")));
  ws = join(root, "ws");
  mkdirSync(ws);
  victim = join(root, "victim");
  writeFileSync(victim, VICTIM, { mode: 0o600 });
  markSandboxWritable(ws);
  dir = openHostDir(ws);
});
afterEach(() => {
  dir.close();
  rmSync(root, { recursive: true, force: true });
});

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof HostPathError) return error.message;
    throw error;
  }
  throw new Error("not refused");
}

describe("openHostFile", () => {
  it("creates, appends through its descriptor, and reopens only a regular file with one link", () => {
    const file = openHostFile(dir, "t.jsonl", { mode: 0o600, append: true });
    expect(file.created).toBe(true);
    file.write("one\n");
    file.close();
    const again = openHostFile(dir, "t.jsonl", { mode: 0o600, append: true });
    expect(again.created).toBe(false);
    again.write("two\n");
    again.close();
    expect(readFileSync(join(ws, "t.jsonl"), "utf8")).toBe("one\ntwo\n");
    expect(statSync(join(ws, "t.jsonl")).mode & 0o777).toBe(0o600);
  });

  it("refuses a symlink, a hard-linked file and a fifo at the name, without hanging or writing", () => {
    symlinkSync(victim, join(ws, "link"));
    expect(refusal(() => openHostFile(dir, "link", { mode: 0o600, append: true }))).toMatch(
      /link: it is a symlink/,
    );
    linkSync(victim, join(ws, "hard"));
    expect(refusal(() => openHostFile(dir, "hard", { mode: 0o600, append: true }))).toMatch(
      /hard: it has 2 hard links/,
    );
    // Not even emptied: the checks come before the truncation.
    expect(refusal(() => writeHostFile(join(ws, "hard"), "x"))).toMatch(/2 hard links/);
    execFileSync("mkfifo", [join(ws, "fifo")]);
    expect(refusal(() => openHostFile(dir, "fifo", { mode: 0o600, append: true }))).toMatch(
      /fifo: it is a fifo/,
    );
    expect(refusal(() => openHostFile(dir, "fifo", { mode: 0o600, read: true }))).toMatch(
      /fifo: a fifo, not a regular file/,
    );
    expect(readFileSync(victim, "utf8")).toBe(VICTIM);
  });

  it("stops writing once the name leads elsewhere, and never writes what is there now", () => {
    const file = openHostFile(dir, "t.jsonl", { mode: 0o600, append: true });
    file.write("mine\n");
    renameSync(join(ws, "t.jsonl"), join(ws, "t.old"));
    symlinkSync(victim, join(ws, "t.jsonl"));
    expect(refusal(() => file.write("more\n"))).toMatch(/t\.jsonl: it was replaced by a symlink since/);
    unlinkSync(join(ws, "t.jsonl"));
    expect(refusal(() => file.write("more\n"))).toMatch(/it was removed since/);
    writeFileSync(join(ws, "t.jsonl"), "theirs\n");
    expect(refusal(() => file.write("more\n"))).toMatch(/replaced by another file/);
    file.close();
    expect(readFileSync(victim, "utf8")).toBe(VICTIM);
    expect(readFileSync(join(ws, "t.old"), "utf8")).toBe("mine\n");
    expect(readFileSync(join(ws, "t.jsonl"), "utf8")).toBe("theirs\n");
  });

  it("refuses an existing file when it must create one", () => {
    writeFileSync(join(ws, "out-1.stdout"), "planted");
    expect(refusal(() => openHostFile(dir, "out-1.stdout", { mode: 0o600, exclusive: true }))).toMatch(
      /exists already/,
    );
  });

  it("writeHostFile replaces a file's whole content, through no link in a workspace", () => {
    writeHostFile(join(ws, "d", "x.diff"), "long text\n");
    writeHostFile(join(ws, "d", "x.diff"), "short\n");
    expect(readFileSync(join(ws, "d", "x.diff"), "utf8")).toBe("short\n");
    symlinkSync(root, join(ws, "up"));
    expect(refusal(() => writeHostFile(join(ws, "up", "victim"), "x"))).toMatch(/up is a symlink/);
    expect(readFileSync(victim, "utf8")).toBe(VICTIM);
  });
});
