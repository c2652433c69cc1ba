import { execFileSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { restoreGitCommand } from "../../../../../src/cli/runs/restore-git-command.js";
import {
  describeGitAside,
  moveGitSurfaceAside,
  restoreGitAside,
  topMostChanges,
} from "../../../../../src/sandbox/host/git/git-aside.js";
import { asideDirOf, moveEntry } from "../../../../../src/sandbox/host/git/git-aside-store.js";
import { gitSurfaceChanges, scanGitSurface } from "../../../../../src/sandbox/host/git/git-surface.js";

let ws: string;
let outside: string;
let state: string;
let env: NodeJS.ProcessEnv;
const put = (path: string, text = "") => {
  mkdirSync(join(ws, path, ".."), { recursive: true });
  writeFileSync(join(ws, path), text);
};
const git = (dir: string, ...args: string[]) =>
  execFileSync(
    "git",
    [
      "-c",
      "user.name=t",
      "-c",
      "user.email=t@example.invalid",
      "-c",
      "init.defaultBranch=main",
      "-C",
      dir,
      ...args,
    ],
    { stdio: "ignore" },
  );

/** Every entry under `path`, lstat only: kind, mode and bytes or link target. */
function tree(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    const full = rel === "" ? path : join(path, rel);
    const info = lstatSync(full);
    if (info.isSymbolicLink()) out[rel] = `link:${readlinkSync(full)}`;
    else if (info.isFile()) out[rel] = `file:${info.mode.toString(8)}:${readFileSync(full, "base64")}`;
    else {
      out[rel] = `dir:${info.mode.toString(8)}`;
      for (const name of readdirSync(full)) walk(rel === "" ? name : `${rel}/${name}`);
    }
  };
  walk("");
  return out;
}

/** Scans, lets `plant` work, moves aside what changed. */
async function runEnd(plant: () => void) {
  const before = await scanGitSurface(ws);
  plant();
  return moveGitSurfaceAside(ws, gitSurfaceChanges(before, await scanGitSurface(ws)), env);
}

beforeEach(() => {
  ws = mkdtempSync(join(tmpdir(), "harness-aside-ws-"));
  outside = mkdtempSync(join(tmpdir(), "harness-aside-out-"));
  state = mkdtempSync(join(tmpdir(), "harness-aside-state-"));
  env = { XDG_STATE_HOME: state };
  git(ws, "init", "-q");
  put("README.md", "hi\n");
  git(ws, "add", "-A");
  git(ws, "commit", "-qm", "one");
});
afterEach(() => {
  for (const dir of [ws, outside, state]) rmSync(dir, { recursive: true, force: true });
});

describe("topMostChanges", () => {
  it("keeps a moved directory and drops what lies inside it", () => {
    expect(
      topMostChanges([
        { path: "sub/.git/config", how: "created" },
        { path: "sub/.git", how: "created" },
        { path: "sub/.gitx", how: "created" },
        { path: ".git/commondir", how: "created" },
      ]).map((c) => c.path),
    ).toEqual([".git/commondir", "sub/.git", "sub/.gitx"]);
  });
});

describe("moveGitSurfaceAside", () => {
  it("moves nothing that git writes in normal work, in the repository or in a nested one", async () => {
    git(ws, "init", "-q", "nested");
    put("nested/a.txt", "a\n");
    git(join(ws, "nested"), "add", "-A");
    git(join(ws, "nested"), "commit", "-qm", "n");
    const result = await runEnd(() => {
      for (const dir of [ws, join(ws, "nested")]) {
        writeFileSync(join(dir, "b.txt"), "b\n");
        git(dir, "add", "-A");
        git(dir, "commit", "-qm", "two");
        git(dir, "branch", "side");
        git(dir, "reset", "-q", "--hard", "HEAD~1"); // ORIG_HEAD, logs
        git(dir, "gc", "-q"); // packed-refs, packs
      }
    });
    expect(result).toEqual({ moved: [], failed: [] });
    expect(existsSync(join(state, "harness", "git-aside"))).toBe(false);
    expect(existsSync(join(ws, "nested/.git/COMMIT_EDITMSG"))).toBe(true);
  });

  it("moves a new .git whatever it is (directory, gitdir: file, symlink) as it is, and restores it byte for byte", async () => {
    mkdirSync(join(outside, "evil"));
    writeFileSync(join(outside, "evil/config"), "[core]\n\tfsmonitor = touch /tmp/x\n");
    const result = await runEnd(() => {
      git(ws, "init", "-q", "sub");
      execFileSync("git", ["-C", join(ws, "sub"), "config", "core.fsmonitor", "touch /tmp/x"]);
      put("dep/.git", "gitdir: ../../elsewhere\n");
      mkdirSync(join(ws, "linked"));
      symlinkSync(join(outside, "evil"), join(ws, "linked/.git"));
      put(".git/commondir", "../evil\n");
    });
    expect(result.failed).toEqual([]);
    expect(result.moved.map((m) => m.path)).toEqual([
      ".git/commondir",
      "dep/.git",
      "linked/.git",
      "sub/.git",
    ]);
    const quarantine = result.dir as string;
    expect(quarantine.startsWith(join(state, "harness", "git-aside"))).toBe(true);
    expect((statSync(quarantine).mode & 0o777).toString(8)).toBe("700");
    const stored = new Map(result.moved.map((m) => [m.path, join(quarantine, m.stored)]));
    for (const path of stored.keys()) expect(existsSync(join(ws, path))).toBe(false);
    // The link itself moved; what it pointed at stayed where it was.
    expect(readlinkSync(stored.get("linked/.git") as string)).toBe(join(outside, "evil"));
    expect(readFileSync(join(outside, "evil/config"), "utf8")).toContain("fsmonitor");
    expect(readFileSync(join(stored.get("sub/.git") as string, "config"), "utf8")).toContain("fsmonitor");
    // Nothing in the quarantine is named .git.
    expect(execFileSync("find", [quarantine, "-name", ".git"], { encoding: "utf8" })).toBe("");
    const snapshots = new Map([...stored].map(([path, at]) => [path, tree(at)]));

    const restored = await restoreGitAside(result.id as string, env);
    expect(restored.refused).toEqual([]);
    expect(restored.restored.sort()).toEqual([...stored.keys()].sort());
    for (const [path, snapshot] of snapshots) expect(tree(join(ws, path))).toEqual(snapshot);
    expect(existsSync(quarantine)).toBe(false);
  });

  it("moves only the changed files of a nested repository that was there before, not the repository", async () => {
    git(ws, "init", "-q", "nested");
    const result = await runEnd(() => {
      execFileSync("git", ["-C", join(ws, "nested"), "config", "core.fsmonitor", "touch /tmp/x"]);
      put("nested/.git/hooks/post-checkout", "#!/bin/sh\ntouch /tmp/x\n");
    });
    expect(result.moved.map((m) => `${m.how} ${m.path}`)).toEqual([
      "changed nested/.git/config",
      "created nested/.git/hooks/post-checkout",
    ]);
    expect(existsSync(join(ws, "nested/.git/HEAD"))).toBe(true);
    expect(existsSync(join(ws, "nested/.git/config"))).toBe(false);
  });

  it("never follows a symlink the sandbox put at a directory on the way", async () => {
    mkdirSync(join(outside, ".git"));
    writeFileSync(join(outside, ".git/config"), "host's own\n");
    symlinkSync(outside, join(ws, "a"));
    const result = await moveGitSurfaceAside(ws, [{ path: "a/.git", how: "created" }], env);
    expect(result.moved).toEqual([]);
    expect(result.failed).toEqual([{ path: "a/.git", how: "created", reason: "a is a symlink" }]);
    expect(readFileSync(join(outside, ".git/config"), "utf8")).toBe("host's own\n");
    // No empty quarantine is left behind.
    expect(readdirSync(join(state, "harness", "git-aside"))).toEqual([]);
    expect(describeGitAside(ws, result).join("\n")).toMatch(
      /could not move them aside:\n {2}created a\/\.git \(a is a symlink\)\n {2}Look at them/,
    );
  });

  it("says what it cannot move when there is no quarantine, and moves nothing", async () => {
    writeFileSync(join(state, "harness"), "a file where the state directory should be");
    const result = await runEnd(() => put(".git/commondir", "../x\n"));
    expect(result.moved).toEqual([]);
    expect(result.failed.map((f) => f.path)).toEqual([".git/commondir"]);
    expect(result.failed[0]?.reason).toMatch(/^no quarantine: /);
    expect(existsSync(join(ws, ".git/commondir"))).toBe(true);
  });

  it("prints names with their escape sequences visible, never raw, one line each, and the restore command", async () => {
    const name = "evil\u001b]52;c;aGk=\u0007\u202e";
    const result = await runEnd(() => put(`${name}/.git`, "gitdir: x\n"));
    const lines = describeGitAside(ws, result);
    for (const control of ["\u001b", "\u0007", "\u202e"]) expect(lines.join("\n")).not.toContain(control);
    expect(lines[1]).toBe("  moved aside evil\\x1b]52;c;aGk=\\x07\\u202e/.git (created)");
    expect(lines.at(-1)).toMatch(new RegExp(`harness restore-git ${result.id}$`));
  });
});

describe("restoreGitAside", () => {
  it("refuses to put anything over what is there now, or through a symlink, and keeps it in the quarantine", async () => {
    const result = await runEnd(() => {
      put(".git/commondir", "../evil\n");
      put("dep/.git", "gitdir: x\n");
      put("other/.git", "gitdir: y\n");
    });
    expect(result.moved).toHaveLength(3);
    mkdirSync(join(ws, ".git/commondir")); // an empty directory: rename(2) would replace it
    rmSync(join(ws, "other"), { recursive: true });
    symlinkSync(outside, join(ws, "other"));
    const out: string[] = [];
    const err: string[] = [];
    const code = await restoreGitCommand(result.id as string, {
      stdout: (text) => out.push(text),
      stderr: (text) => err.push(text),
      env,
    });
    expect(code).toBe(1);
    expect(out).toEqual(["restored dep/.git\n"]);
    expect(err.join("")).toMatch(/not restored: \.git\/commondir \(something is there now/);
    expect(err.join("")).toMatch(/not restored: other\/\.git \(other is a symlink\)/);
    expect(existsSync(join(outside, ".git"))).toBe(false);
    expect(readFileSync(join(ws, "dep/.git"), "utf8")).toBe("gitdir: x\n");
    // What was refused is still there, and a second try after clearing the way restores it.
    rmSync(join(ws, ".git/commondir"), { recursive: true });
    rmSync(join(ws, "other"));
    mkdirSync(join(ws, "other"));
    const again = await restoreGitAside(result.id as string, env);
    expect(again.restored.sort()).toEqual([".git/commondir", "other/.git"]);
    expect(readFileSync(join(ws, ".git/commondir"), "utf8")).toBe("../evil\n");
  });

  it("takes only a plain id", () => {
    expect(() => asideDirOf("../runs", env)).toThrow(/not a quarantine id/);
    expect(() => asideDirOf("..", env)).toThrow(/not a quarantine id/);
  });
});

describe("moveEntry", () => {
  it("moves a tree to another file system as it is (copy, then removal)", async () => {
    // /dev/shm is a tmpfs on Linux: another file system than the temporary directory, usually.
    const other = mkdtempSync(join(existsSync("/dev/shm") ? "/dev/shm" : tmpdir(), "harness-aside-"));
    try {
      put("sub/.git/config", "[core]\n");
      put("sub/.git/hooks/pre-commit", "#!/bin/sh\n");
      symlinkSync("/etc/passwd", join(ws, "sub/.git/link"));
      const before = tree(join(ws, "sub/.git"));
      await moveEntry(join(ws, "sub/.git"), join(other, "1"));
      expect(existsSync(join(ws, "sub/.git"))).toBe(false);
      expect(tree(join(other, "1"))).toEqual(before);
      await moveEntry(join(other, "1"), join(ws, "sub/.git"));
      expect(tree(join(ws, "sub/.git"))).toEqual(before);
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});
