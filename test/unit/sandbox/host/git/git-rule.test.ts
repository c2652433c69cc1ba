import { describe, expect, it } from "vitest";
import {
  GIT_DIRECTORY,
  gitDirectories,
  gitSurfaceChanges,
  gitSurfaceOf,
  headIsValid,
  type RuleEntry,
  treeView,
} from "../../../../../src/sandbox/host/git/git-rule.js";

type Spec = Record<string, string | { link: string } | null>;

/** A tree from a spec: a string is a file's content, null a directory, `{ link }` a symlink. */
function tree(spec: Spec) {
  const entries = new Map<string, RuleEntry & { sha256?: string; mode?: number }>();
  const content = new Map<string, Buffer>();
  for (const [path, value] of Object.entries(spec)) {
    if (value === null) entries.set(path, { type: "directory" });
    else if (typeof value === "string") {
      entries.set(path, { type: "file", sha256: `h${value.length}:${value}`, mode: 0o644 });
      content.set(path, Buffer.from(value));
    } else entries.set(path, { type: "symlink", linkname: value.link });
  }
  return treeView(entries, async (path, max) => content.get(path)?.subarray(0, max));
}

const REF = "ref: refs/heads/main\n";

describe("headIsValid (git's validate_headref)", () => {
  const file = { type: "file" };
  it.each([
    ["ref: refs/heads/main\n", true],
    ["ref:refs/x", true],
    ["ref: \n\trefs/heads/x", true],
    ["0123456789abcdef0123456789abcdef01234567\n", true],
    [`${"A".repeat(64)}`, true],
    ["ref: heads/main", false],
    ["0123456789abcdef", false],
    ["hello", false],
    ["", false],
  ])("%j: %s", (text, valid) => {
    expect(headIsValid(file, Buffer.from(text))).toBe(valid);
  });

  it("takes a symlink by its target text, never following it; a file it cannot read counts", () => {
    expect(headIsValid({ type: "symlink", linkname: "refs/heads/main" }, undefined)).toBe(true);
    expect(headIsValid({ type: "symlink", linkname: "../elsewhere/HEAD" }, undefined)).toBe(false);
    expect(headIsValid({ type: "file" }, undefined)).toBe(true);
    expect(headIsValid({ type: "directory" }, undefined)).toBe(false);
    expect(headIsValid(undefined, undefined)).toBe(false);
  });
});

describe("gitDirectories", () => {
  it("finds repositories by git's rule whatever they are called, the root included", async () => {
    const dirs = await gitDirectories(
      tree({
        HEAD: REF,
        refs: null,
        ".git": null,
        ".git/HEAD": REF,
        ".git/refs": null,
        "docs/HEAD": REF,
        "docs/refs": null,
        "linked/HEAD": REF,
        "linked/commondir": "../.git\n",
        "notes/HEAD": "just a file named HEAD\n",
        "notes/refs": null,
        "lonely/HEAD": REF,
        "sym/HEAD": { link: "refs/heads/main" },
        "sym/refs": { link: "/anywhere" },
      }),
    );
    expect(Object.fromEntries(dirs)).toEqual({
      "": "found",
      ".git": "dotgit",
      docs: "found",
      linked: "found",
      sym: "found",
    });
  });
});

describe("gitSurfaceOf", () => {
  it("takes git's layout in a repository found by the rule, not every file called config", async () => {
    const surface = await gitSurfaceOf(
      tree({
        HEAD: REF,
        refs: null,
        config: "[core]\n",
        "hooks/pre-commit": "#!/bin/sh\n",
        "objects/info/alternates": "/etc\n",
        "src/config": "a project file\n",
        "src/hooks/x": "not git's\n",
        "worktrees/w/HEAD": REF,
        "worktrees/w/commondir": "../..\n",
        "worktrees/w/gitdir": "/x/.git\n",
      }),
      "/w",
    );
    expect([...surface.keys()].sort()).toEqual([
      "HEAD",
      "config",
      "hooks/pre-commit",
      "objects/info/alternates",
      "worktrees/w/HEAD",
      "worktrees/w/commondir",
      "worktrees/w/gitdir",
    ]);
    expect(surface.get("HEAD")).toBe(GIT_DIRECTORY);
  });

  it("inside .git: a submodule's files even without HEAD, and not a branch called config", async () => {
    const surface = await gitSurfaceOf(
      tree({
        ".git": null,
        ".git/HEAD": REF,
        ".git/config": "",
        ".git/refs/heads/config": "0000\n",
        ".git/modules/lib/config": "",
        ".git/modules/lib/hooks/post-checkout": "x",
        ".git/modules/done/HEAD": REF,
        ".git/modules/done/refs": null,
        ".git/modules/done/refs/heads/config": "0000\n",
        ".git/modules/done/config": "",
      }),
      "/w",
    );
    expect([...surface.keys()].sort()).toEqual([
      ".git",
      ".git/config",
      ".git/modules/done/HEAD",
      ".git/modules/done/config",
      ".git/modules/lib/config",
      ".git/modules/lib/hooks/post-checkout",
    ]);
  });

  it("adds what the configs of every repository name in the work tree, includes of includes too", async () => {
    const surface = await gitSurfaceOf(
      tree({
        "vendor/lib/.git": null,
        "vendor/lib/.git/config": "[include]\n\tpath = ../one.gitconfig\n[core]\n\thooksPath = .githooks\n",
        "vendor/lib/one.gitconfig": "[include] path = two.gitconfig\n",
        "vendor/lib/two.gitconfig": "",
        "vendor/lib/.githooks": null,
        "vendor/lib/.githooks/pre-commit": "#!/bin/sh\n",
        "bare/HEAD": REF,
        "bare/refs": null,
        "bare/config": "[core]\n\thooksPath = /w/shared-hooks\n",
        "shared-hooks": null,
        "shared-hooks/post-checkout": "x",
        "vendor/lib/other.txt": "",
      }),
      "/w",
    );
    expect([...surface.keys()].sort()).toEqual([
      "bare/HEAD",
      "bare/config",
      "shared-hooks",
      "shared-hooks/post-checkout",
      "vendor/lib/.git",
      "vendor/lib/.git/config",
      "vendor/lib/.githooks",
      "vendor/lib/.githooks/pre-commit",
      "vendor/lib/one.gitconfig",
      "vendor/lib/two.gitconfig",
    ]);
  });

  it("a directory becoming a repository is a change of its HEAD, with why; a branch switch is none", async () => {
    const before = await gitSurfaceOf(
      tree({ "docs/HEAD": "notes\n", "docs/refs": null, "old/HEAD": REF, "old/refs": null }),
      "/w",
    );
    const after = await gitSurfaceOf(
      tree({ "docs/HEAD": REF, "docs/refs": null, "old/HEAD": "ref: refs/heads/other\n", "old/refs": null }),
      "/w",
    );
    expect(gitSurfaceChanges(before, after)).toEqual([
      { path: "docs/HEAD", how: "created", why: "git would take docs for a repository" },
    ]);
  });
});
