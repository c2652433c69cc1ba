/**
 * Names that are not valid UTF-8 (`$'d\xff'`): a sandbox can create them, and a host walk that reads
 * directories as strings gets U+FFFD back, fails the lstat that follows and silently skips the
 * entry. Each walk here must see them, act on them through their exact bytes, and print them.
 */
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pack } from "tar-stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../../../src/errors.js";
import { readSandboxTree } from "../../../../src/sandbox/copy/sandbox-tree.js";
import { planWorkspaceCopy } from "../../../../src/sandbox/copy/workspace-archive.js";
import { scanWorkspace } from "../../../../src/sandbox/copy/workspace-scan.js";
import {
  describeGitAside,
  moveGitSurfaceAside,
  restoreGitAside,
} from "../../../../src/sandbox/host/git/git-aside.js";
import { gitSurfaceChanges, scanGitSurface } from "../../../../src/sandbox/host/git/git-surface.js";
import {
  bytesOfName,
  fsPath,
  hasRawBytes,
  nameFromBytes,
} from "../../../../src/sandbox/host/paths/byte-names.js";
import { describeSetIdFiles, stripSetIdBits } from "../../../../src/sandbox/host/strip-set-id.js";
import { sanitizeForTerminal } from "../../../../src/terminal/sanitize.js";

let ws: string;
let state: string;

/** `ws` joined with a relative path given as text and raw bytes: `at("d", [0xff], "/x")`. */
function at(...parts: (string | number[])[]): Buffer {
  return Buffer.concat([
    Buffer.from(`${ws}/`),
    ...parts.map((p) => (typeof p === "string" ? Buffer.from(p) : Buffer.from(p))),
  ]);
}

function put(path: Buffer, text = "", mode = 0o644): void {
  writeFileSync(path, text);
  chmodSync(path, mode);
}

beforeEach(() => {
  ws = realpathSync(mkdtempSync(join(tmpdir(), "harness-bytes-")));
  state = mkdtempSync(join(tmpdir(), "harness-bytes-state-"));
});
afterEach(() => {
  rmSync(ws, { recursive: true, force: true });
  rmSync(state, { recursive: true, force: true });
});

describe("the setuid sweep", () => {
  it("strips and reports a set-id file whose name, or whose directory's, is not UTF-8", async () => {
    put(at("s", [0xff]), "#!/bin/sh\n", 0o4755);
    mkdirSync(at("d", [0xff]));
    put(at("d", [0xff], "/inner"), "#!/bin/sh\n", 0o2711);
    // An overlong "/" (C0 AF) and an encoded surrogate (ED A0 80) are not UTF-8 either.
    put(at([0xc0, 0xaf, 0xed, 0xa0, 0x80]), "", 0o6755);
    // A valid name that is not ASCII is left as it is.
    put(at("é"), "", 0o4700);
    const found = await stripSetIdBits(ws);
    expect(found.map((f) => f.mode)).toEqual(expect.arrayContaining([0o4755, 0o2711, 0o6755, 0o4700]));
    expect(found).toHaveLength(4);
    expect(statSync(at("s", [0xff])).mode & 0o7777).toBe(0o755);
    expect(statSync(at("d", [0xff], "/inner")).mode & 0o7777).toBe(0o711);
    expect(statSync(at([0xc0, 0xaf, 0xed, 0xa0, 0x80])).mode & 0o7777).toBe(0o755);
    expect(statSync(at("é")).mode & 0o7777).toBe(0o700);
    expect(describeSetIdFiles(found).sort()).toEqual(
      [
        "removed the setuid bit from s\\xff",
        "removed the setgid bit from d\\xff/inner",
        "removed the setuid and setgid bits from \\xc0\\xaf\\xed\\xa0\\x80",
        "removed the setuid bit from é",
      ].sort(),
    );
  });
});

describe("the git surface and git-aside", () => {
  it("finds a repository planted under a directory whose name is not UTF-8, moves it aside and back", async () => {
    const before = await scanGitSurface(ws);
    mkdirSync(at("d", [0xff], "/.git/hooks"), { recursive: true });
    put(at("d", [0xff], "/.git/HEAD"), "ref: refs/heads/main\n");
    put(at("d", [0xff], "/.git/commondir"), "/elsewhere\n");
    put(at("d", [0xff], "/.git/config"), "[core]\n\tfsmonitor = touch /tmp/pwned\n");
    put(at("d", [0xff], "/.git/hooks/pre-commit"), "#!/bin/sh\n", 0o755);
    const after = await scanGitSurface(ws);
    const changes = gitSurfaceChanges(before, after);
    expect(changes.map((c) => c.path)).toContain("d\udcff/.git");
    expect(changes.map((c) => c.path)).toContain("d\udcff/.git/commondir");

    const env = { XDG_STATE_HOME: state };
    const result = await moveGitSurfaceAside(ws, changes, env);
    expect(result.failed).toEqual([]);
    expect(result.moved.map((m) => m.path)).toEqual(["d\udcff/.git"]);
    expect(existsSync(at("d", [0xff], "/.git"))).toBe(false);
    expect(existsSync(at("d", [0xff]))).toBe(true);
    expect(describeGitAside(ws, result).join("\n")).toContain("moved aside d\\xff/.git (created)");

    const restored = await restoreGitAside(result.id as string, env);
    expect(restored.refused).toEqual([]);
    expect(restored.restored).toEqual(["d\udcff/.git"]);
    expect(lstatSync(at("d", [0xff], "/.git/commondir")).isFile()).toBe(true);
  });

  it("sees git directories, hooks and `.git` files anywhere under names that are not UTF-8", async () => {
    execFileSync("git", ["init", "-q", ws], { stdio: "ignore" });
    const before = await scanGitSurface(ws);
    mkdirSync(at(".git/modules/m", [0xfe]), { recursive: true });
    put(at(".git/modules/m", [0xfe], "/config"), "[core]\n\tfsmonitor = x\n");
    mkdirSync(at(".git/worktrees/w", [0xff]), { recursive: true });
    put(at(".git/worktrees/w", [0xff], "/commondir"), "/elsewhere\n");
    put(at(".git/hooks/h", [0x80]), "#!/bin/sh\n", 0o755);
    mkdirSync(at([0xff], "/", [0xfe]), { recursive: true });
    put(at([0xff], "/", [0xfe], "/.git"), "gitdir: /elsewhere\n");
    const changes = gitSurfaceChanges(before, await scanGitSurface(ws)).map((c) => c.path);
    expect(changes).toEqual([
      ".git/hooks/h\udc80",
      ".git/modules/m\udcfe/config",
      ".git/worktrees/w\udcff/commondir",
      "\udcff/\udcfe/.git",
    ]);
  });
});

describe("copy mode", () => {
  it("refuses the whole copy, in one line, when a name in the workspace is not UTF-8", async () => {
    writeFileSync(join(ws, "ok.txt"), "ok");
    mkdirSync(at("d", [0xff]));
    put(at("d", [0xff], "/file"), "content");
    const rejection = planWorkspaceCopy(ws, 1024 ** 2);
    await expect(rejection).rejects.toBeInstanceOf(ConfigError);
    await expect(rejection).rejects.toThrow(/not valid UTF-8 \(d\\xff\), which copy mode cannot carry/);
  });

  it("refuses a symlink whose target is not UTF-8 (it would arrive pointing elsewhere)", async () => {
    symlinkSync(at("t", [0xff]), join(ws, "link"));
    await expect(planWorkspaceCopy(ws, 1024 ** 2)).rejects.toThrow(/not valid UTF-8 \(link\)/);
  });

  it("copies a workspace whose name that is not UTF-8 is left out by .harnessignore", async () => {
    writeFileSync(join(ws, ".harnessignore"), "d*\n");
    mkdirSync(at("d", [0xff]));
    put(at("d", [0xff], "/file"), "content");
    const plan = await planWorkspaceCopy(ws, 1024 ** 2);
    expect(plan.scan.entries.map((e) => e.path)).toEqual([".harnessignore"]);
  });

  it("never compares such a name that appeared on the host during the run (left out, not deleted)", async () => {
    put(at("n", [0xff]), "x");
    const scan = await scanWorkspace(ws, () => false);
    expect(scan.skipped).toEqual([{ path: "n\udcff", reason: expect.stringMatching(/not valid UTF-8/) }]);
  });
});

/** A one-file tar whose name has raw bytes: packed with a placeholder, then the byte patched in. */
async function tarWithRawName(prefix: string, raw: number[], content: string): Promise<Readable> {
  const p = pack();
  p.entry({ name: "workspace/", type: "directory", mode: 0o755 });
  p.entry({ name: "workspace/kept.txt", mode: 0o644 }, "kept");
  p.entry({ name: `${prefix}${"#".repeat(raw.length)}`, mode: 0o644 }, content);
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of p) chunks.push(chunk as Buffer);
  const tar = Buffer.concat(chunks);
  // The third header: after two headers and one 512-byte content block.
  const header = tar.subarray(3 * 512, 4 * 512);
  header.set(raw, prefix.length);
  header.fill(0x20, 148, 156);
  const sum = header.reduce((a, b) => a + b, 0);
  header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "latin1");
  return Readable.from([tar]);
}

describe("copy mode's way back", () => {
  it("never applies a name the sandbox made that is not UTF-8, and does not call the host's file deleted", async () => {
    const options = {
      stripPrefix: "workspace/",
      maxTotalBytes: 1024,
      keepFileBytes: 100,
      keepTotalBytes: 1000,
    };
    const sandbox = await readSandboxTree(await tarWithRawName("workspace/d", [0xff], "planted"), {
      ...options,
      host: new Map(),
    });
    expect([...sandbox.tree.keys()]).toEqual(["kept.txt"]);
    expect(sandbox.unsafeNames).toEqual(["workspace/d\ufffd"]);
    expect(sandbox.undecodable).toEqual(["d\ufffd"]);
  });
});

describe("names as lossless strings", () => {
  it("round-trips every byte sequence and shows raw bytes as \\xNN on the terminal", () => {
    const samples = [
      [0x64, 0xff],
      [0xc3, 0xa9, 0x80, 0xc3],
      [0xed, 0xa0, 0x80],
      [0xf4, 0x90, 0x80, 0x80],
      [0xef, 0xbb, 0xbf, 0x61],
      [0xf0, 0x9f, 0x98, 0x80, 0xfe],
    ];
    for (const bytes of samples) {
      const name = nameFromBytes(Buffer.from(bytes));
      expect([...bytesOfName(name)]).toEqual(bytes);
      expect(JSON.parse(JSON.stringify(name))).toBe(name);
    }
    expect(nameFromBytes(Buffer.from([0x64, 0xff]))).toBe("d\udcff");
    expect(hasRawBytes("é😀")).toBe(false);
    expect(fsPath("plain/é")).toBe("plain/é");
    expect(sanitizeForTerminal(nameFromBytes(Buffer.from([0x1b, 0x5b, 0x32, 0x4a, 0xff])))).toBe(
      "\\x1b[2J\\xff",
    );
    expect(sanitizeForTerminal("lone \ud800")).toBe("lone \\ud800");
  });
});
