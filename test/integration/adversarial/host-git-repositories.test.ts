/**
 * Repositories without a `.git` name: git takes any directory with a valid HEAD and refs/ (or a
 * commondir) for one, the workspace's root included, and a directory below it finds it too. A task
 * that makes one, or writes what a remaining repository's config names in the work tree, must not
 * get the owner's plain host git to run anything: bind mode moves it aside when the run ends, copy
 * mode's apply refuses it (and its review says so). Each plant is first shown to be real: made by the
 * same command in a scratch directory on the host, the same plain git runs it.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { copyOf } from "../../support/copied.js";
import { skipDocker } from "../../support/docker-available.js";
import { chownAll, fsmonitorConfig, hostGit, hostGitTry, ran } from "../../support/host-git.js";
import { makeWorkspace } from "../../support/workspace.js";

const stateHome = mkdtempSync(join(tmpdir(), "harness-state-"));
process.env["XDG_STATE_HOME"] = stateHome;
afterAll(() => rmSync(stateHome, { recursive: true, force: true }));

/** A repository at the root with one commit. */
function repo(dir: string): void {
  hostGit(dir, ["-c", "init.defaultBranch=main", "init", "-q"]);
  writeFileSync(join(dir, "README.md"), "hello\n");
  hostGit(dir, ["add", "-A"]);
  hostGit(dir, ["commit", "-qm", "initial"]);
}

/** No repository anywhere: a workspace inside the owner's home, say, with one folder. */
function none(dir: string): void {
  mkdirSync(join(dir, "pkg"));
}

/** A vendored repository whose config names a work-tree file to include and a hooks directory. */
function nested(dir: string): void {
  const lib = join(dir, "vendor/lib");
  mkdirSync(join(lib, ".githooks"), { recursive: true });
  writeFileSync(join(lib, ".githooks/.keep"), "");
  writeFileSync(join(lib, "lib.gitconfig"), "");
  hostGit(lib, ["-c", "init.defaultBranch=main", "init", "-q"]);
  hostGit(lib, ["config", "include.path", "../lib.gitconfig"]);
  hostGit(lib, ["config", "core.hooksPath", ".githooks"]);
  hostGit(lib, ["add", "-A"]);
  hostGit(lib, ["commit", "-qm", "lib"]);
}

const STATUS = ["status"];
const COMMIT = ["commit", "-q", "--allow-empty", "-m", "host"];

/** A bare repository made a work tree of itself, with a planted fsmonitor: `git status` runs it. */
const bareAt = (dir: string, marker: string) =>
  `git init -q --bare ${dir} && git -C ${dir} config core.bare false && git -C ${dir} config core.worktree . && ` +
  `git -C ${dir} config core.fsmonitor 'touch ${marker}'`;

/** A repository written by hand, no git involved: HEAD (as given), refs/, objects/, config. */
const handMade = (dir: string, head: string, marker: string) =>
  `mkdir -p ${dir}/refs/heads ${dir}/objects && ${head} && ` +
  `printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n\\tworktree = .\\n\\tfsmonitor = touch ${marker}\\n' > ${dir}/config`;

interface Plant {
  name: string;
  project: (dir: string) => void;
  /** The planting command; `ws` is the workspace's host path, where the planted command writes. */
  command: (ws: string) => string;
  /** Where the owner then runs plain git (workspace-relative), and which command. */
  checks: { dir: string; args: string[] }[];
  /** Bind mode: what is moved aside. */
  moved: string[];
  /** Copy mode: what the apply refuses (at least). */
  refused: string[];
}

const PLANTS: Plant[] = [
  {
    name: "git init --bare docs, in a repository's work tree",
    project: repo,
    command: (ws) => `${bareAt("docs", `${ws}/RAN-docs`)} && mkdir docs/sub`,
    checks: [
      { dir: "docs", args: STATUS },
      { dir: "docs/sub", args: STATUS },
    ],
    moved: ["docs/HEAD", "docs/config", "docs/hooks"],
    refused: ["docs/HEAD", "docs/refs", "docs/config", "docs/hooks"],
  },
  {
    name: "git init --bare docs, in a workspace that is not a repository",
    project: none,
    command: (ws) => `${bareAt("docs", `${ws}/RAN-docs`)} && mkdir docs/sub`,
    checks: [
      { dir: "docs", args: STATUS },
      { dir: "docs/sub", args: STATUS },
    ],
    moved: ["docs/HEAD", "docs/config", "docs/hooks"],
    refused: ["docs/HEAD", "docs/refs", "docs/config", "docs/hooks"],
  },
  {
    name: "the workspace's root made a bare repository (it was none)",
    project: none,
    command: (ws) => bareAt(".", `${ws}/RAN-root`),
    checks: [
      { dir: "", args: STATUS },
      { dir: "pkg", args: STATUS },
    ],
    moved: ["HEAD", "config", "hooks"],
    refused: ["HEAD", "refs", "config", "hooks"],
  },
  {
    name: "a repository written by hand (HEAD, refs/, objects/, config), no git",
    project: repo,
    command: (ws) => handMade("notes", "echo 'ref: refs/heads/main' > notes/HEAD", `${ws}/RAN-notes`),
    checks: [{ dir: "notes", args: STATUS }],
    moved: ["notes/HEAD", "notes/config"],
    refused: ["notes/HEAD", "notes/refs", "notes/config"],
  },
  {
    name: "HEAD a symlink to refs/heads/main",
    project: none,
    command: (ws) => handMade("cache", "ln -s refs/heads/main cache/HEAD", `${ws}/RAN-cache`),
    checks: [{ dir: "cache", args: STATUS }],
    moved: ["cache/HEAD", "cache/config"],
    refused: ["cache/HEAD", "cache/refs", "cache/config"],
  },
  {
    name: "HEAD a detached object id",
    project: none,
    command: (ws) =>
      handMade("build", "echo 0123456789abcdef0123456789abcdef01234567 > build/HEAD", `${ws}/RAN-build`),
    checks: [{ dir: "build", args: STATUS }],
    moved: ["build/HEAD", "build/config"],
    refused: ["build/HEAD", "build/refs", "build/config"],
  },
  {
    name: "the work-tree file a vendored repository's config includes",
    project: nested,
    command: (ws) => `${fsmonitorConfig(`${ws}/RAN-include`)} > vendor/lib/lib.gitconfig`,
    checks: [{ dir: "vendor/lib", args: STATUS }],
    moved: ["vendor/lib/lib.gitconfig"],
    refused: ["vendor/lib/lib.gitconfig"],
  },
  {
    name: "a hook in the hooks directory a vendored repository's config names",
    project: nested,
    command: (ws) =>
      `printf '#!/bin/sh\\ntouch ${ws}/RAN-hook\\n' > vendor/lib/.githooks/pre-commit && chmod +x vendor/lib/.githooks/pre-commit`,
    checks: [{ dir: "vendor/lib", args: COMMIT }],
    moved: ["vendor/lib/.githooks/pre-commit"],
    refused: ["vendor/lib/.githooks/pre-commit"],
  },
];

function check(ws: string, plant: Plant): void {
  for (const { dir, args } of plant.checks) hostGitTry(join(ws, dir), args);
}

/** The printed restore command, run as the owner would: `harness restore-git ID` (from source). */
function runRestore(line: string): void {
  const args = /harness (restore-git \S+)$/.exec(line)?.[1]?.split(" ") ?? [];
  expect(args).toHaveLength(2);
  execFileSync(
    process.execPath,
    ["--import", "tsx", fileURLToPath(new URL("../../../src/cli.ts", import.meta.url)), ...args],
    { env: { ...process.env, XDG_STATE_HOME: stateHome }, stdio: "ignore" },
  );
}

describe("each plant is real: made on the host, plain git runs it", () => {
  it.each(PLANTS)("$name", (plant) => {
    const dir = mkdtempSync(join(tmpdir(), "harness-plant-"));
    try {
      plant.project(dir);
      execFileSync("sh", ["-ec", plant.command(dir)], { cwd: dir, stdio: "ignore" });
      check(dir, plant);
      expect(ran(dir)).not.toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(skipDocker)("bind mode moves aside a repository git would find, whatever its name", () => {
  it.each(PLANTS)("$name", async (plant) => {
    using ws = makeWorkspace();
    plant.project(ws.path);
    chownAll(ws.path);
    const lines: string[] = [];
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      onProgress: (line) => lines.push(line),
    });
    const planted = await sandbox.exec(`${plant.command(ws.path)} && echo planted`);
    expect(planted.stdout, planted.stderr).toBe("planted\n");
    await sandbox.stop();

    check(ws.path, plant);
    expect(ran(ws.path)).toEqual([]);
    const report = lines.join("\n");
    for (const path of plant.moved) expect(report).toContain(`moved aside ${path} (`);
    // Put back with the printed command, the same plain git runs the plant: what moved was what mattered.
    runRestore(lines.find((l) => /harness restore-git \S+$/.test(l)) ?? "");
    check(ws.path, plant);
    expect(ran(ws.path)).not.toEqual([]);
  });
});

describe.skipIf(skipDocker)(
  "copy mode's apply refuses a repository git would find, and says so first",
  () => {
    it.each(PLANTS)("$name", async (plant) => {
      using ws = makeWorkspace();
      plant.project(ws.path);
      chownAll(ws.path);
      await using sandbox = await DockerSandbox.open({ workspace: ws.path, isolation: "copy" });
      const planted = await sandbox.exec(`${plant.command(ws.path)} && echo planted`);
      expect(planted.stdout, planted.stderr).toBe("planted\n");
      const changes = await copyOf(sandbox).exportChanges();
      const applied = await copyOf(sandbox).applyChanges(changes);
      check(ws.path, plant);
      expect(ran(ws.path)).toEqual([]);
      const refused = applied.refused.map((r) => r.path);
      for (const path of plant.refused) expect(refused).toContain(path);
      // The review named each before the apply.
      for (const path of plant.refused) expect(changes.summary).toContain(`\n! ${path}: `);
    });
  },
);
