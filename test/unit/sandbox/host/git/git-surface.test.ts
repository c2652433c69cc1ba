import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { gitSurfaceChanges, scanGitSurface } from "../../../../../src/sandbox/host/git/git-surface.js";

let ws: string;
const put = (path: string, text = "") => {
  mkdirSync(join(ws, path, ".."), { recursive: true });
  writeFileSync(join(ws, path), text);
};

beforeEach(() => {
  ws = mkdtempSync(join(tmpdir(), "harness-surface-"));
});
afterEach(() => rmSync(ws, { recursive: true, force: true }));

describe("scanGitSurface", () => {
  it("records what git reads to decide what to run, and nothing else of a repository", async () => {
    put(".git/HEAD", "ref: refs/heads/main\n");
    put(".git/config", "[core]\n");
    put(".git/hooks/pre-commit.sample", "#!/bin/sh\n");
    put(".git/objects/info/alternates", "");
    put(".git/objects/ab/cdef", "blob");
    put(".git/refs/heads/main", "0000\n");
    put(".git/refs/heads/config", "0000\n");
    put(".git/modules/lib/config", "[core]\n");
    put(".git/modules/lib/hooks/post-checkout", "x");
    put(".git/worktrees/w/commondir", "../..\n");
    put(".git/worktrees/w/gitdir", "/elsewhere/.git\n");
    put("src/main.py", "print(1)\n");
    put("vendor/dep/.git", "gitdir: ../../x\n");
    mkdirSync(join(ws, "nested/.git/hooks"), { recursive: true });
    put("nested/.git/config", "");
    expect([...(await scanGitSurface(ws)).keys()].sort()).toEqual([
      ".git",
      ".git/config",
      ".git/hooks",
      ".git/hooks/pre-commit.sample",
      ".git/modules/lib/config",
      ".git/modules/lib/hooks",
      ".git/modules/lib/hooks/post-checkout",
      ".git/objects/info/alternates",
      ".git/worktrees/w/commondir",
      ".git/worktrees/w/gitdir",
      "nested/.git",
      "nested/.git/config",
      "nested/.git/hooks",
      "vendor/dep/.git",
    ]);
  });

  it("never enters a symlinked directory, and records a symlinked .git as a link", async () => {
    mkdirSync(join(ws, "real/.git"), { recursive: true });
    put("real/.git/config", "");
    symlinkSync(join(ws, "real"), join(ws, "linked"));
    symlinkSync("/etc", join(ws, "sub-git"));
    mkdirSync(join(ws, "x"));
    symlinkSync("/tmp", join(ws, "x/.git"));
    const surface = await scanGitSurface(ws);
    expect([...surface.keys()].sort()).toEqual(["real/.git", "real/.git/config", "x/.git"]);
    expect(surface.get("x/.git")).toBe("symlink:/tmp");
  });
});

describe("scanGitSurface: repositories by git's rule", () => {
  it("finds a bare repository anywhere, the root included, without entering its objects", async () => {
    put("HEAD", "ref: refs/heads/main\n");
    mkdirSync(join(ws, "refs/heads"), { recursive: true });
    put("config", "[core]\n\tbare = false\n");
    put("objects/ab/config", "an object directory is never walked");
    put("objects/info/alternates", "/etc\n");
    put("src/config", "a project file\n");
    put("docs/HEAD", "0123456789abcdef0123456789abcdef01234567\n");
    put("docs/commondir", "../elsewhere\n");
    put("docs/hooks/post-checkout", "x");
    put("notes/HEAD", "not a ref\n");
    mkdirSync(join(ws, "notes/refs"));
    put("notes/refs/inner/.git", "gitdir: /x\n");
    const surface = await scanGitSurface(ws);
    expect([...surface.keys()].sort()).toEqual([
      "HEAD",
      "config",
      "docs/HEAD",
      "docs/commondir",
      "docs/hooks",
      "docs/hooks/post-checkout",
      "notes/refs/inner/.git",
      "objects/info/alternates",
    ]);
  });
});

describe("gitSurfaceChanges", () => {
  it("reports created and changed paths (content or mode), not removed ones", async () => {
    put(".git/config", "[core]\n");
    put(".git/hooks/old", "x");
    const before = await scanGitSurface(ws);
    put(".git/commondir", "../evil\n");
    put(".git/config", "[core]\n\tfsmonitor = x\n");
    rmSync(join(ws, ".git/hooks/old"));
    const changes = gitSurfaceChanges(before, await scanGitSurface(ws));
    expect(changes).toEqual([
      { path: ".git/commondir", how: "created" },
      { path: ".git/config", how: "changed" },
    ]);
  });
});
