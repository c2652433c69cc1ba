import { mkdirSync, mkdtempSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  normalizeProtectPath,
  planProtectedMounts,
  protectedBindMounts,
  verifyProtectedMounts,
} from "../../../../../src/sandbox/host/git/protected-paths.js";

let ws: string;
let notes: string[];
const owner = `${process.getuid?.() ?? 1000}:${process.getgid?.() ?? 1000}`;
const plan = (options = {}) => planProtectedMounts(ws, owner, options, (line) => notes.push(line));
const summary = async (options = {}) =>
  (await plan(options)).map((m) => `${m.path}:${m.readOnly ? "ro" : "rw"}`);

beforeEach(() => {
  ws = mkdtempSync(join(tmpdir(), "harness-protect-"));
  notes = [];
});
afterEach(() => rmSync(ws, { recursive: true, force: true }));

describe("planProtectedMounts", () => {
  it("protects nothing in a workspace without any of the paths, and says nothing", async () => {
    expect(await plan()).toEqual([]);
    expect(notes).toEqual([]);
  });

  it("pins .git and mounts its config and hooks, .env, .envrc and .vscode read-only", async () => {
    mkdirSync(join(ws, ".git/hooks"), { recursive: true });
    writeFileSync(join(ws, ".git/config"), "[core]\n");
    writeFileSync(join(ws, ".envrc"), "export X=1\n");
    writeFileSync(join(ws, ".env"), "MODEL_ID=x\n");
    mkdirSync(join(ws, ".vscode"));
    expect(await summary()).toEqual([
      ".env:ro",
      ".envrc:ro",
      ".git:rw",
      ".git/config:ro",
      ".git/hooks:ro",
      ".vscode:ro",
    ]);
    expect(notes).toEqual([]);
  });

  it("creates a missing .git/hooks and .git/config, since the task could create and fill them", async () => {
    mkdirSync(join(ws, ".git"));
    expect(await summary()).toEqual([".git:rw", ".git/config:ro", ".git/hooks:ro"]);
    expect(statSync(join(ws, ".git/hooks")).isDirectory()).toBe(true);
    expect(statSync(join(ws, ".git/config")).size).toBe(0);
    expect(notes.join("\n")).toMatch(/created an empty \.git\/config[\s\S]*created an empty \.git\/hooks/);
  });

  it("protects submodule and worktree git directories and the files that redirect git, when they exist", async () => {
    for (const dir of [".git", ".git/modules/lib", ".git/modules/lib/modules/deep", ".git/worktrees/w"]) {
      mkdirSync(join(ws, dir, "hooks"), { recursive: true });
      writeFileSync(join(ws, dir, "HEAD"), "ref: refs/heads/main\n");
      writeFileSync(join(ws, dir, "config"), "");
    }
    mkdirSync(join(ws, ".git/objects/info"), { recursive: true });
    writeFileSync(join(ws, ".git/objects/info/alternates"), "");
    writeFileSync(join(ws, ".git/config.worktree"), "");
    writeFileSync(join(ws, ".git/worktrees/w/commondir"), "../..\n");
    writeFileSync(join(ws, ".git/worktrees/w/gitdir"), "/elsewhere/.git\n");
    expect(await summary()).toEqual([
      ".git:rw",
      ".git/config:ro",
      ".git/config.worktree:ro",
      ".git/hooks:ro",
      ".git/modules:rw",
      ".git/modules/lib:rw",
      ".git/modules/lib/config:ro",
      ".git/modules/lib/hooks:ro",
      ".git/modules/lib/modules:rw",
      ".git/modules/lib/modules/deep:rw",
      ".git/modules/lib/modules/deep/config:ro",
      ".git/modules/lib/modules/deep/hooks:ro",
      ".git/objects:rw",
      ".git/objects/info:rw",
      ".git/objects/info/alternates:ro",
      ".git/worktrees:rw",
      ".git/worktrees/w:rw",
      ".git/worktrees/w/commondir:ro",
      ".git/worktrees/w/config:ro",
      ".git/worktrees/w/gitdir:ro",
      ".git/worktrees/w/hooks:ro",
    ]);
    expect(notes).toEqual([]);
  });

  it("protects the hooks directory and included configs that .git/config names in the work tree", async () => {
    mkdirSync(join(ws, ".git/hooks"), { recursive: true });
    mkdirSync(join(ws, ".husky"));
    writeFileSync(
      join(ws, ".git/config"),
      "[core]\n\thooksPath = .husky\n[include]\n\tpath = ../team.gitconfig\n",
    );
    expect(await summary()).toEqual([
      ".git:rw",
      ".git/config:ro",
      ".git/hooks:ro",
      ".husky:ro",
      "team.gitconfig:ro",
    ]);
    expect(statSync(join(ws, "team.gitconfig")).size).toBe(0);
    expect(notes).toEqual([
      "created an empty team.gitconfig (named by include.path in .git/config) so it can be mounted read-only",
    ]);
  });

  it("mounts a worktree's .git file read-only, so it cannot be pointed at another repository", async () => {
    writeFileSync(join(ws, ".git"), "gitdir: /elsewhere/.git/worktrees/x\n");
    expect(await summary()).toEqual([".git:ro"]);
  });

  it("never mounts a symlink, nor anything below a symlinked directory, and says so", async () => {
    symlinkSync("/etc", join(ws, ".vscode"));
    mkdirSync(join(ws, "real"));
    symlinkSync("real", join(ws, "linked"));
    writeFileSync(join(ws, "real/file"), "x");
    mkdirSync(join(ws, ".git/hooks"), { recursive: true });
    symlinkSync("/etc/gitconfig", join(ws, ".git/config"));
    expect(await summary({ extraPaths: ["linked/file"] })).toEqual([".git:rw", ".git/hooks:ro"]);
    expect(notes).toEqual([
      "not protecting .git/config: it is a symlink, and a symlink is never mounted",
      "not protecting .vscode: .vscode is a symlink, and a symlink is never mounted",
      "not protecting linked/file: linked is a symlink, and a symlink is never mounted",
    ]);
  });

  it("adds --protect paths, notes the missing ones, and protects nothing when disabled", async () => {
    writeFileSync(join(ws, "Makefile"), "all:\n");
    writeFileSync(join(ws, ".envrc"), "");
    expect(await summary({ extraPaths: ["./Makefile", "ci/missing.yml"] })).toEqual([
      ".envrc:ro",
      "Makefile:ro",
    ]);
    expect(notes).toEqual(["not protecting ci/missing.yml: it does not exist in the workspace"]);
    expect(await plan({ disabled: true, extraPaths: ["Makefile"] })).toEqual([]);
  });
});

describe("pinning the directories above a protected path", () => {
  it("pins every parent of a nested --protect path read-write, parents first, deduplicated", async () => {
    mkdirSync(join(ws, ".github/workflows"), { recursive: true });
    writeFileSync(join(ws, ".github/workflows/ci.yml"), "on: push\n");
    mkdirSync(join(ws, "a/b"), { recursive: true });
    writeFileSync(join(ws, "a/b/c.txt"), "");
    writeFileSync(join(ws, "a/d.txt"), "");
    expect(await summary({ extraPaths: [".github/workflows", "a/b/c.txt", "a/d.txt"] })).toEqual([
      ".github:rw",
      ".github/workflows:ro",
      "a:rw",
      "a/b:rw",
      "a/b/c.txt:ro",
      "a/d.txt:ro",
    ]);
    expect(notes).toEqual([]);
  });

  it("keeps a parent read-only when it is protected itself, in either order", async () => {
    mkdirSync(join(ws, ".github/workflows"), { recursive: true });
    const both = [".github:ro", ".github/workflows:ro"];
    expect(await summary({ extraPaths: [".github/workflows", ".github"] })).toEqual(both);
    expect(await summary({ extraPaths: [".github", ".github/workflows"] })).toEqual(both);
  });

  it("pins nothing for a protected path that does not exist", async () => {
    mkdirSync(join(ws, ".github"));
    expect(await summary({ extraPaths: [".github/workflows"] })).toEqual([]);
  });

  it("refuses a parent that was moved aside and rebuilt after the check", async () => {
    mkdirSync(join(ws, ".github/workflows"), { recursive: true });
    const mounts = await plan({ extraPaths: [".github/workflows"] });
    renameSync(join(ws, ".github"), join(ws, ".github-old"));
    mkdirSync(join(ws, ".github"));
    renameSync(join(ws, ".github-old/workflows"), join(ws, ".github/workflows"));
    await expect(verifyProtectedMounts(ws, mounts)).rejects.toThrow(
      /'\.github' in .* changed while the sandbox was being created/,
    );
  });
});

describe("normalizeProtectPath", () => {
  it("keeps paths inside the workspace and refuses the rest", () => {
    expect(normalizeProtectPath(".github//workflows/")).toBe(".github/workflows");
    expect(normalizeProtectPath("a/../b")).toBe("b");
    for (const bad of ["", "/etc/passwd", "..", "../x", "a/../../x", "."]) {
      expect(() => normalizeProtectPath(bad)).toThrow(/--protect takes a path inside the workspace/);
    }
  });
});

describe("protectedBindMounts and verifyProtectedMounts", () => {
  it("maps to binds of the same host path, and refuses a path swapped after the check", async () => {
    writeFileSync(join(ws, ".envrc"), "");
    const mounts = await plan();
    expect(protectedBindMounts(ws, "/workspace", mounts)).toEqual([
      { Type: "bind", Source: join(ws, ".envrc"), Target: "/workspace/.envrc", ReadOnly: true },
    ]);
    await expect(verifyProtectedMounts(ws, mounts)).resolves.toBeUndefined();
    renameSync(join(ws, ".envrc"), join(ws, "moved"));
    symlinkSync("/etc/passwd", join(ws, ".envrc"));
    await expect(verifyProtectedMounts(ws, mounts)).rejects.toThrow(/\.envrc' .* changed while the sandbox/);
  });
});
