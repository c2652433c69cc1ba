import { execFileSync } from "node:child_process";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { applyCopyChanges } from "../../../../src/sandbox/copy/apply-copy-changes.js";
import { protectedPathRefusal, workspaceRefusal } from "../../../../src/sandbox/copy/apply-policy.js";
import { exportCopyChanges } from "../../../../src/sandbox/copy/export-copy-changes.js";
import type { SandboxArchive } from "../../../../src/sandbox/copy/sandbox-archive.js";
import { planWorkspaceCopy } from "../../../../src/sandbox/copy/workspace-archive.js";
import type { ProtectOptions } from "../../../../src/sandbox/host/git/protected-paths.js";

let base: string;
let ws: string;
/** The sandbox's copy of the workspace, as the Docker archive API would return it ("workspace/…"). */
let copy: string;

beforeEach(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), "harness-apply-")));
  ws = join(base, "host");
  copy = join(base, "workspace");
  mkdirSync(ws);
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

/** Host git as a user runs it: no protective flags, so a planted fsmonitor or hook would run. */
function git(dir: string, ...args: string[]): string {
  const who = ["-c", "safe.directory=*", "-c", "user.name=u", "-c", "user.email=u@example.invalid"];
  return execFileSync("git", [...who, "-C", dir, ...args], { encoding: "utf8", stdio: "pipe" });
}

function makeRepo(): void {
  git(ws, "-c", "init.defaultBranch=main", "init", "-q");
  writeFileSync(join(ws, "README.md"), "hello\n");
  writeFileSync(join(ws, ".envrc"), "export A=1\n");
  mkdirSync(join(ws, ".vscode"));
  writeFileSync(join(ws, ".vscode/settings.json"), "{}\n");
  writeFileSync(join(ws, ".git/hooks/pre-commit"), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
  git(ws, "add", "-A");
  git(ws, "commit", "-qm", "initial");
}

/** The sandbox's archive, a tar of `copy` as `docker cp` would produce it. */
const fakeArchive: SandboxArchive = {
  stripPrefix: "workspace/",
  open: async () => ({
    stream: Readable.from([
      execFileSync("tar", ["-C", base, "-cf", "-", "workspace"], { maxBuffer: 64 * 1024 ** 2 }),
    ]),
  }),
};

/**
 * Copies the workspace as copy mode does, runs the task's commands on the copy, reviews the changes
 * and applies them all (as `--apply` does), with the protect options given.
 */
async function runAndApply(commands: string, protect: ProtectOptions = {}) {
  const plan = await planWorkspaceCopy(ws, 1024 ** 3);
  execFileSync("cp", ["-a", `${ws}/.`, copy]);
  execFileSync("sh", ["-ec", commands], { cwd: copy, stdio: "pipe" });
  const changes = await exportCopyChanges(plan, fakeArchive, protect);
  const policy = await workspaceRefusal(plan, protect, changes.changes);
  const applied = await applyCopyChanges(plan, fakeArchive, changes, policy);
  return { changes, applied, refusedPaths: applied.refused.map((r) => r.path) };
}

const FSMONITOR = (marker: string) => `printf '[core]\\n\\tfsmonitor = "touch ${marker}"\\n' >> `;

describe("protectedPathRefusal", () => {
  const refuse = protectedPathRefusal({ extraPaths: [".github/workflows"] });
  it("refuses .git itself anywhere, git's config, hooks and commondir, and protected paths", () => {
    for (const path of [
      ".git",
      "sub/.git",
      ".git/config",
      ".git/config.worktree",
      ".git/commondir",
      ".git/hooks",
      ".git/hooks/pre-commit",
      ".git/modules/lib/config",
      ".git/worktrees/wt/commondir",
      ".git/worktrees/wt/gitdir",
      ".git/objects/info/alternates",
      ".git/modules/lib/objects/info/http-alternates",
      "vendor/x/.git/hooks/post-checkout",
      ".env",
      ".envrc",
      ".vscode",
      ".vscode/tasks.json",
      ".devcontainer/devcontainer.json",
      ".devcontainer.json",
      ".github/workflows",
      ".github/workflows/ci.yml",
    ]) {
      expect({ path, added: refuse(path, "file"), deleted: refuse(path) }).toEqual({
        path,
        added: expect.any(String),
        deleted: expect.any(String),
      });
    }
  });

  it("allows git's objects and refs, ordinary files, and a directory above a protected path", () => {
    for (const path of [
      ".git/objects/ab/cdef",
      ".git/refs/heads/main",
      ".git/index",
      ".gitignore",
      "src/a.ts",
    ]) {
      expect(refuse(path, "file")).toBeUndefined();
    }
    expect(refuse(".github", "directory")).toBeUndefined();
    expect(refuse(".github")).toBeUndefined();
    expect(refuse(".github", "symlink")).toBe(
      ".github holds the protected .github/workflows: only a directory is applied there",
    );
    expect(refuse(".github", "file")).toMatch(/only a directory is applied there/);
  });

  it("refuses nothing with --no-protect", () => {
    const open = protectedPathRefusal({ disabled: true, extraPaths: [".github/workflows"] });
    expect([".git", ".git/config", ".envrc", ".github/workflows/ci.yml"].map((p) => open(p))).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});

describe("applying copy mode's changes never plants git commands or touches protected paths", () => {
  it("refuses .git replaced by a symlink to a repository the task wrote, and keeps the host's .git whole", async () => {
    makeRepo();
    const marker = join(base, "RAN-fsmonitor");
    const { applied, refusedPaths } = await runAndApply(
      `mkdir evil && cp -a .git/. evil/ && ${FSMONITOR(marker)} evil/config && rm -rf .git && ln -s evil .git`,
    );
    expect(applied.refused).toContainEqual({
      path: ".git",
      reason: "a repository's .git decides which config and hooks git runs on the host; not applied",
    });
    expect(refusedPaths).toContain(".git/config");
    expect(refusedPaths).toContain(".git/HEAD");
    expect(applied.deleted).toEqual([]);
    expect(lstatSync(join(ws, ".git")).isDirectory()).toBe(true);
    expect(readFileSync(join(ws, ".git/config"), "utf8")).not.toContain("fsmonitor");
    git(ws, "status");
    git(ws, "commit", "-q", "--allow-empty", "-m", "host");
    expect(existsSync(marker)).toBe(false);
    expect(git(ws, "rev-list", "--count", "HEAD")).toBe("2\n");
  });

  it("refuses .git replaced by a 'gitdir:' file or a directory of another type", async () => {
    makeRepo();
    const marker = join(base, "RAN-gitdir");
    const { applied } = await runAndApply(
      `mkdir evil && cp -a .git/. evil/ && ${FSMONITOR(marker)} evil/config && rm -rf .git && echo 'gitdir: evil' > .git && mkdir -p sub && echo 'gitdir: ../evil' > sub/.git`,
    );
    expect(applied.refused.filter((r) => r.path === ".git" || r.path === "sub/.git")).toEqual([
      {
        path: ".git",
        reason: "a repository's .git decides which config and hooks git runs on the host; not applied",
      },
      {
        path: "sub/.git",
        reason: "a repository's .git decides which config and hooks git runs on the host; not applied",
      },
    ]);
    expect(lstatSync(join(ws, ".git")).isDirectory()).toBe(true);
    git(ws, "status");
    git(ws, "-C", "sub", "status");
    expect(existsSync(marker)).toBe(false);
  });

  it("refuses deleting git's config and hooks, and a commondir pointing at another config", async () => {
    makeRepo();
    const marker = join(base, "RAN-commondir");
    const { applied, refusedPaths } = await runAndApply(
      `rm .git/config && rm -rf .git/hooks && mkdir -p evil && ${FSMONITOR(marker)} evil/config && echo ../evil > .git/commondir`,
    );
    expect(refusedPaths).toEqual(
      expect.arrayContaining([".git/config", ".git/hooks", ".git/hooks/pre-commit", ".git/commondir"]),
    );
    expect(applied.deleted).toEqual([]);
    expect(existsSync(join(ws, ".git/config"))).toBe(true);
    expect(existsSync(join(ws, ".git/hooks/pre-commit"))).toBe(true);
    expect(existsSync(join(ws, ".git/commondir"))).toBe(false);
    git(ws, "status");
    expect(existsSync(marker)).toBe(false);
  });

  it("still applies the task's commits (objects, refs, index)", async () => {
    makeRepo();
    const { applied } = await runAndApply(
      "echo more >> README.md && git -c safe.directory='*' -c user.name=a -c user.email=a@example.invalid commit -qam work",
    );
    expect(applied.refused).toEqual([]);
    expect(git(ws, "rev-list", "--count", "HEAD")).toBe("2\n");
    expect(git(ws, "status", "--porcelain")).toBe("");
  });

  it("refuses deleting protected paths, and applies it with --no-protect", async () => {
    makeRepo();
    const { refusedPaths } = await runAndApply("rm .envrc && rm -rf .vscode");
    expect(refusedPaths.sort()).toEqual([".envrc", ".vscode", ".vscode/settings.json"]);
    expect(readFileSync(join(ws, ".envrc"), "utf8")).toBe("export A=1\n");
    expect(readFileSync(join(ws, ".vscode/settings.json"), "utf8")).toBe("{}\n");

    rmSync(copy, { recursive: true });
    const open = await runAndApply("rm .envrc && rm -rf .vscode", { disabled: true });
    expect(open.applied.deleted.sort()).toEqual([".envrc", ".vscode", ".vscode/settings.json"]);
    expect(existsSync(join(ws, ".envrc"))).toBe(false);
  });

  it("refuses a symlink over a directory above a --protect path, whether or not the path exists", async () => {
    mkdirSync(join(ws, ".github/workflows"), { recursive: true });
    writeFileSync(join(ws, ".github/workflows/ci.yml"), "on: push\n");
    const { applied } = await runAndApply(
      "mv .github .github-old && mkdir -p evil/workflows && echo evil > evil/workflows/ci.yml && ln -s evil .github",
      { extraPaths: [".github/workflows"] },
    );
    expect(applied.refused).toEqual(
      expect.arrayContaining([
        {
          path: ".github",
          reason: ".github holds the protected .github/workflows: only a directory is applied there",
        },
        {
          path: ".github/workflows/ci.yml",
          reason: ".github/workflows is protected (host programs run it); not applied",
        },
      ]),
    );
    expect(lstatSync(join(ws, ".github")).isDirectory()).toBe(true);
    expect(readFileSync(join(ws, ".github/workflows/ci.yml"), "utf8")).toBe("on: push\n");

    rmSync(join(ws, ".github"), { recursive: true });
    rmSync(copy, { recursive: true });
    const fresh = await runAndApply(
      "mkdir -p evil/workflows && echo evil > evil/workflows/ci.yml && ln -s evil .github",
      {
        extraPaths: [".github/workflows"],
      },
    );
    expect(fresh.refusedPaths).toEqual([".github"]);
    expect(existsSync(join(ws, ".github"))).toBe(false);
  });
});

describe("applying copy mode's changes never makes a repository git would find", () => {
  const BARE = (dir: string, marker: string) =>
    `git init -q --bare ${dir} && git -C ${dir} config core.bare false && git -C ${dir} config core.worktree . && git -C ${dir} config core.fsmonitor 'touch ${marker}'`;

  it("refuses what makes a folder or the root a repository, applies the rest, and the review says so", async () => {
    mkdirSync(join(ws, "pkg"));
    const marker = join(base, "RAN-bare");
    const { changes, applied, refusedPaths } = await runAndApply(
      `${BARE("docs", marker)} && ${BARE(".", marker)}`,
    );
    for (const path of [
      "HEAD",
      "refs",
      "config",
      "hooks",
      "docs/HEAD",
      "docs/refs",
      "docs/config",
      "docs/hooks",
    ]) {
      expect(refusedPaths).toContain(path);
      expect(changes.summary).toContain(`\n! ${path}: `);
    }
    expect(applied.refused.find((r) => r.path === "docs/HEAD")?.reason).toBe(
      "git on the host would take docs for a repository; not applied",
    );
    expect(applied.refused.find((r) => r.path === "HEAD")?.reason).toBe(
      "git on the host would take the workspace's root for a repository; not applied",
    );
    expect(applied.written).toContain("docs/description");
    for (const dir of ["", "pkg", "docs"]) {
      try {
        git(join(ws, dir), "status");
      } catch {}
    }
    expect(existsSync(marker)).toBe(false);
  });

  it("looks on the host for what its ignore rules kept out of the copy (a HEAD)", async () => {
    mkdirSync(join(ws, "docs"));
    writeFileSync(join(ws, "docs/HEAD"), "ref: refs/heads/main\n");
    writeFileSync(join(ws, ".harnessignore"), "/docs/HEAD\n");
    const marker = join(base, "RAN-ignored");
    const { refusedPaths } = await runAndApply(
      `mkdir -p docs/refs docs/objects && printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = .\\n\\tfsmonitor = touch ${marker}\\n' > docs/config`,
    );
    expect(refusedPaths).toEqual(expect.arrayContaining(["docs/refs", "docs/config"]));
    try {
      git(join(ws, "docs"), "status");
    } catch {}
    expect(existsSync(marker)).toBe(false);
  });
});
