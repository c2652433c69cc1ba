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
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Docker from "dockerode";
import { afterAll, describe, expect, it } from "vitest";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { copyOf } from "../../support/copied.js";
import { skipDocker } from "../../support/docker-available.js";
import { chownAll, hostGit } from "../../support/host-git.js";
import { makeWorkspace } from "../../support/workspace.js";

/**
 * A committed repository with a submodule (so `.git/modules/lib` exists), owned by the sandbox user.
 * `optional`: also `.git/config.worktree` and `objects/info/alternates`, which some repositories have.
 */
function makeProject(ws: string, lib: string, optional = true): void {
  hostGit(lib, ["-c", "init.defaultBranch=main", "init", "-q"]);
  writeFileSync(join(lib, "lib.txt"), "lib\n");
  hostGit(lib, ["add", "-A"]);
  hostGit(lib, ["commit", "-qm", "lib"]);
  hostGit(ws, ["-c", "init.defaultBranch=main", "init", "-q"]);
  writeFileSync(join(ws, "README.md"), "hello\n");
  hostGit(ws, ["-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "lib"]);
  hostGit(ws, ["add", "-A"]);
  hostGit(ws, ["commit", "-qm", "initial"]);
  // Present in some repositories: each is mounted read-only when it exists.
  if (optional) {
    writeFileSync(join(ws, ".git/config.worktree"), "");
    writeFileSync(join(ws, ".git/objects/info/alternates"), "");
  }
  chownAll(ws);
}

const ran = (ws: string) => readdirSync(ws).filter((f) => f.startsWith("RAN-"));

/** One line per attempt: "NAME written" or "NAME refused". */
function script(attempts: [string, string][]): string {
  return attempts
    .map(([name, cmd]) => `(${cmd}) >/dev/null 2>&1 && echo "${name} written" || echo "${name} refused"`)
    .join("\n");
}

const fsmonitorConfig = (ws: string, tag: string) =>
  `printf '[core]\\n\\tfsmonitor = touch ${ws}/RAN-${tag}\\n'`;

/** Where this file's runs keep what they move aside: harness's state directory, set per file. */
const stateHome = mkdtempSync(join(tmpdir(), "harness-state-"));
process.env["XDG_STATE_HOME"] = stateHome;
afterAll(() => rmSync(stateHome, { recursive: true, force: true }));

/** The quarantines made so far. */
const asideIds = () => {
  const root = join(stateHome, "harness", "git-aside");
  return existsSync(root) ? readdirSync(root).sort() : [];
};

describe.skipIf(skipDocker)("adversarial: making the host's git run a command", () => {
  it("cannot change a submodule's config or hooks, config.worktree or alternates that exist", async () => {
    using ws = makeWorkspace();
    using lib = makeWorkspace("harness-lib-");
    makeProject(ws.path, lib.path);
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const attempts: [string, string][] = [
      ["module-config", `${fsmonitorConfig(ws.path, "module")} >> .git/modules/lib/config`],
      ["module-config-rename-over", `cp .git/modules/lib/config x && mv -f x .git/modules/lib/config`],
      ["module-hook", "echo 'touch RAN-hook' > .git/modules/lib/hooks/post-checkout"],
      ["module-dir-aside", "mv .git/modules/lib .git/modules/lib.old"],
      ["modules-aside", "mv .git/modules .git/modules.old"],
      ["config-worktree", `${fsmonitorConfig(ws.path, "worktree")} > .git/config.worktree`],
      ["alternates", "echo /etc > .git/objects/info/alternates"],
      ["objects-info-aside", "mv .git/objects/info .git/objects/info.old"],
    ];
    const result = await sandbox.exec(script(attempts));
    expect(result.stdout.trim().split("\n")).toEqual(attempts.map(([name]) => `${name} refused`));
    // The submodule still works for the agent: a commit inside it goes through.
    const work = await sandbox.exec(
      "cd lib && echo more >> lib.txt && git -c user.name=a -c user.email=a@example.invalid commit -qam work && git rev-list --count HEAD",
    );
    expect(work.stdout).toBe("2\n");
    hostGit(ws.path, ["status"]);
    hostGit(ws.path, ["-C", "lib", "status"]);
    expect(ran(ws.path)).toEqual([]);
  });

  it("cannot plant a hook in the work-tree hooks directory that .git/config names (husky)", async () => {
    using ws = makeWorkspace();
    hostGit(ws.path, ["-c", "init.defaultBranch=main", "init", "-q"]);
    hostGit(ws.path, ["config", "core.hooksPath", ".husky"]);
    mkdirSync(join(ws.path, ".husky"));
    writeFileSync(join(ws.path, "README.md"), "hello\n");
    hostGit(ws.path, ["add", "-A"]);
    hostGit(ws.path, ["commit", "-qm", "initial"]);
    chownAll(ws.path);
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const attempts: [string, string][] = [
      [
        "husky-hook",
        `printf '#!/bin/sh\\ntouch ${ws.path}/RAN-husky\\n' > .husky/pre-commit && chmod +x .husky/pre-commit`,
      ],
      ["husky-aside", "mv .husky .husky.old && mkdir .husky"],
    ];
    const result = await sandbox.exec(script(attempts));
    expect(result.stdout.trim().split("\n")).toEqual(attempts.map(([name]) => `${name} refused`));
    hostGit(ws.path, ["commit", "-q", "--allow-empty", "-m", "host"]);
    expect(ran(ws.path)).toEqual([]);
  });

  it("copy mode never applies a hook to the work-tree hooks directory that .git/config names", async () => {
    using ws = makeWorkspace();
    hostGit(ws.path, ["-c", "init.defaultBranch=main", "init", "-q"]);
    hostGit(ws.path, ["config", "core.hooksPath", "githooks"]);
    mkdirSync(join(ws.path, "githooks"));
    chownAll(ws.path);
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, isolation: "copy" });
    await sandbox.exec(
      `printf '#!/bin/sh\\ntouch ${ws.path}/RAN-copy\\n' > githooks/pre-commit && echo ok > notes.txt`,
    );
    const applied = await copyOf(sandbox).applyChanges(await copyOf(sandbox).exportChanges());
    expect(applied.written).toEqual(["notes.txt"]);
    expect(applied.refused.map((r) => r.path)).toEqual(["githooks/pre-commit"]);
    expect(existsSync(join(ws.path, "githooks/pre-commit"))).toBe(false);
  });

  it("copy mode reads .git/config's hooks directory after the bind-mode sandboxes of the workspace are stopped", async () => {
    using ws = makeWorkspace();
    hostGit(ws.path, ["-c", "init.defaultBranch=main", "init", "-q"]);
    chownAll(ws.path);
    // A bind-mode sandbox of this workspace run with --no-protect may write .git/config until the
    // moment it is stopped: its last write names a hooks directory the copy's changes fill. The
    // engine client below makes that write when apply looks for sandboxes to stop.
    let armed = false;
    const engine = new Docker();
    const listContainers = engine.listContainers.bind(engine);
    engine.listContainers = ((options: Docker.ContainerListOptions) => {
      if (armed) writeFileSync(join(ws.path, ".git/config"), "[core]\n\thooksPath = late-hooks\n");
      return listContainers(options);
    }) as typeof engine.listContainers;
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, isolation: "copy", docker: engine });
    await sandbox.exec("mkdir late-hooks && printf '#!/bin/sh\\ntouch RAN\\n' > late-hooks/pre-commit");
    const changes = await copyOf(sandbox).exportChanges();
    armed = true;
    const applied = await copyOf(sandbox).applyChanges(changes);
    expect(applied.refused.map((r) => r.path)).toContain("late-hooks/pre-commit");
    expect(existsSync(join(ws.path, "late-hooks/pre-commit"))).toBe(false);
  });

  it("moves aside every way it planted what git would run, after ending the run's background processes", async () => {
    using ws = makeWorkspace();
    using lib = makeWorkspace("harness-lib-");
    makeProject(ws.path, lib.path);
    const lines: string[] = [];
    const sandbox = await DockerSandbox.open({
      workspace: ws.path,
      onProgress: (line) => lines.push(line),
    });
    try {
      const commit = "git -c user.name=a -c user.email=a@example.invalid";
      const planted = await sandbox.exec(
        [
          // commondir: git reads config (and objects, refs) from a directory the task filled.
          `mkdir .evil && cp -r .git/objects .git/refs .git/HEAD .evil/ && ${fsmonitorConfig(ws.path, "commondir")} > .evil/config && echo ../.evil > .git/commondir`,
          // An embedded repository with its own config, added to the index as a gitlink.
          `git init -q sub && git -C sub config core.fsmonitor 'touch ${ws.path}/RAN-embedded' && ${commit} -C sub commit -q --allow-empty -m x && git add sub`,
          // A gitdir file pointing at a git directory the task wrote.
          "mkdir -p vendor/dep && echo 'gitdir: ../../.evil' > vendor/dep/.git",
          // alternates in a submodule that had none.
          "echo /etc > .git/modules/lib/objects/info/http-alternates",
          // A background process that plants once the command has returned.
          "{ (sleep 3; echo ../.evil > .git/modules/lib/commondir; touch late-write) >/dev/null 2>&1 & }",
          "echo planted",
        ].join(" && "),
      );
      expect(planted.stdout).toBe("planted\n");
    } finally {
      await sandbox.stop();
    }
    const report = lines.join("\n");
    // .evil is a repository to git itself (HEAD, objects, refs): what makes it one moves too.
    expect(report).toMatch(/moved aside 7 files the sandbox created or changed/);
    expect(report).toContain("moved aside .evil/HEAD (created: git would take .evil for a repository)");
    for (const path of [
      ".evil/config",
      ".evil/objects/info/alternates",
      ".git/commondir",
      "sub/.git",
      "vendor/dep/.git",
      ".git/modules/lib/objects/info/http-alternates",
    ]) {
      expect(report).toContain(`moved aside ${path} (created)`);
      expect(existsSync(join(ws.path, path))).toBe(false);
    }
    // What lies inside a moved directory goes with it, without a line of its own.
    expect(report).not.toContain("sub/.git/config");
    // The run ended its background process: nothing lands after it.
    await new Promise((resolve) => setTimeout(resolve, 4000));
    expect(existsSync(join(ws.path, "late-write"))).toBe(false);
    expect(existsSync(join(ws.path, ".git/modules/lib/commondir"))).toBe(false);
    // The owner's plain `git status` runs nothing planted, here or in the submodule.
    hostGit(ws.path, ["status"]);
    hostGit(join(ws.path, "vendor/dep"), ["status"]);
    expect(ran(ws.path)).toEqual([]);
    await removeContainer(sandbox.containerId);
  });

  it("moves aside a repository the task creates in a workspace that had none", async () => {
    using ws = makeWorkspace();
    mkdirSync(join(ws.path, "pkg"));
    chownAll(ws.path);
    const lines: string[] = [];
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      onProgress: (line) => lines.push(line),
    });
    // A workspace inside the owner's own checkout: their shell prompt would run `git status` here.
    await sandbox.exec(`git init -q && git config core.fsmonitor 'touch ${ws.path}/RAN-new'`);
    await sandbox.stop();
    expect(lines.join("\n")).toMatch(/moved aside a file .*\n {2}moved aside \.git \(created\)\n/s);
    expect(existsSync(join(ws.path, ".git"))).toBe(false);
  });

  it("says nothing and moves nothing when the run left git's files alone", async () => {
    const asideBefore = asideIds();
    using ws = makeWorkspace();
    using lib = makeWorkspace("harness-lib-");
    makeProject(ws.path, lib.path);
    const lines: string[] = [];
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      onProgress: (line) => lines.push(line),
    });
    await sandbox.exec(
      "echo change >> README.md && git add -A && git -c user.name=a -c user.email=a@example.invalid commit -qm c && git status --short",
    );
    await sandbox.stop();
    expect(lines.filter((l) => /git on this machine|moved aside/.test(l))).toEqual([]);
    expect(asideIds()).toEqual(asideBefore);
  });
});

/** Every entry under `path` (itself included), lstat only: type, mode and bytes or link target. */
function tree(path: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    const full = rel === "" ? path : join(path, rel);
    const info = lstatSync(full);
    if (info.isSymbolicLink()) out[rel] = `link:${readlinkSync(full)}`;
    else if (info.isFile()) out[rel] = `file:${info.mode.toString(8)}:${readFileSync(full, "base64")}`;
    else if (info.isDirectory()) {
      out[rel] = `dir:${info.mode.toString(8)}`;
      for (const name of readdirSync(full)) walk(rel === "" ? name : `${rel}/${name}`);
    } else out[rel] = "other";
  };
  walk("");
  return out;
}

/** The printed restore command, run as the owner would: `harness restore-git ID` (from source). */
function runRestore(line: string): string {
  const args = /harness (restore-git \S+)$/.exec(line)?.[1]?.split(" ") ?? [];
  expect(args).toHaveLength(2);
  return execFileSync(
    process.execPath,
    ["--import", "tsx", fileURLToPath(new URL("../../../src/cli.ts", import.meta.url)), ...args],
    {
      encoding: "utf8",
      env: { ...process.env, XDG_STATE_HOME: stateHome },
      stdio: ["ignore", "pipe", "pipe"],
    },
  );
}

const EVIL = (ws: string, tag: string) =>
  `mkdir .evil && cp -r .git/objects .git/refs .git/HEAD .evil/ && ${fsmonitorConfig(ws, tag)} > .evil/config`;
const COMMIT = "git -c user.name=a -c user.email=a@example.invalid";

interface Plant {
  name: string;
  /** false: a workspace with no repository at all. */
  project: "full" | "bare-minimum" | "none";
  /** The planting command, given the host path of the workspace (which the planted fsmonitor touches). */
  command: (ws: string) => string;
  /** What must be moved aside, workspace-relative. */
  moved: string[];
  /** Directories (workspace-relative, "" for the root) where the owner then runs a plain `git status`. */
  statusIn: string[];
  /** True when a plain host `git status` ran the plant before this change (the marker appeared). */
  ranBefore: boolean;
}

const PLANTS: Plant[] = [
  {
    name: ".git/commondir to a directory whose config sets core.fsmonitor",
    project: "full",
    command: (ws) => `${EVIL(ws, "commondir")} && echo ../.evil > .git/commondir`,
    moved: [".git/commondir"],
    statusIn: [""],
    ranBefore: true,
  },
  {
    name: "a worktree's commondir and gitdir, and its .git file",
    project: "full",
    command: (ws) =>
      `${EVIL(ws, "worktree")} && mkdir -p .git/worktrees/x wt && echo ../../../.evil > .git/worktrees/x/commondir && ` +
      `echo "$PWD/wt/.git" > .git/worktrees/x/gitdir && cp .git/HEAD .git/worktrees/x/HEAD && ` +
      `echo "gitdir: ../.git/worktrees/x" > wt/.git`,
    moved: [".git/worktrees/x/commondir", ".git/worktrees/x/gitdir", "wt/.git"],
    statusIn: ["", "wt"],
    ranBefore: true,
  },
  {
    name: "config.worktree created (extensions.worktreeConfig cannot be set: .git/config is read-only)",
    project: "bare-minimum",
    command: (ws) =>
      `{ git config extensions.worktreeConfig true 2>/dev/null; true; } && ${fsmonitorConfig(ws, "cfgwt")} > .git/config.worktree`,
    moved: [".git/config.worktree"],
    statusIn: [""],
    ranBefore: false,
  },
  {
    name: "objects/info/alternates created",
    project: "bare-minimum",
    command: () => "echo /etc > .git/objects/info/alternates",
    moved: [".git/objects/info/alternates"],
    statusIn: [""],
    ranBefore: false,
  },
  {
    name: "a nested repository with core.fsmonitor, added to the index as a gitlink",
    project: "full",
    command: (ws) =>
      `git init -q sub && git -C sub config core.fsmonitor 'touch ${ws}/RAN-nested' && ` +
      `${COMMIT} -C sub commit -q --allow-empty -m x && git add sub`,
    moved: ["sub/.git"],
    statusIn: ["", "sub"],
    ranBefore: true,
  },
  {
    name: "a gitdir: file pointing at a git directory the task wrote",
    project: "full",
    command: (ws) =>
      `${EVIL(ws, "gitdirfile")} && mkdir -p vendor/dep && echo 'gitdir: ../../.evil' > vendor/dep/.git`,
    moved: ["vendor/dep/.git"],
    statusIn: ["", "vendor/dep"],
    ranBefore: true,
  },
  {
    name: "a .git symlink to a git directory the task wrote",
    project: "full",
    command: (ws) => `${EVIL(ws, "symlink")} && mkdir -p linked && ln -s ../.evil linked/.git`,
    moved: ["linked/.git"],
    statusIn: ["", "linked"],
    ranBefore: true,
  },
  {
    name: "a repository at the root of a workspace that had none",
    project: "none",
    command: (ws) => `git init -q && git config core.fsmonitor 'touch ${ws}/RAN-root'`,
    moved: [".git"],
    statusIn: ["", "pkg"],
    ranBefore: true,
  },
  {
    name: "a submodule's git directory with a new config, and the submodule's .git file",
    project: "full",
    command: (ws) =>
      "mkdir -p .git/modules/y y && cp -r .git/modules/lib/objects .git/modules/lib/refs .git/modules/lib/HEAD .git/modules/y/ && " +
      `{ ${fsmonitorConfig(ws, "module")}; printf '\tworktree = ../../../y\n'; } > .git/modules/y/config && ` +
      `echo 'gitdir: ../.git/modules/y' > y/.git && git -C y checkout -q -f && git add y`,
    moved: [".git/modules/y/config", "y/.git"],
    statusIn: ["", "y"],
    ranBefore: true,
  },
];

describe.skipIf(skipDocker)("adversarial: what a run planted for the host's git is moved aside", () => {
  it.each(PLANTS)("$name", async (plant) => {
    using ws = makeWorkspace();
    using lib = makeWorkspace("harness-lib-");
    if (plant.project === "none") {
      mkdirSync(join(ws.path, "pkg"));
      chownAll(ws.path);
    } else makeProject(ws.path, lib.path, plant.project === "full");
    const lines: string[] = [];
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      onProgress: (line) => lines.push(line),
    });
    const planted = await sandbox.exec(`${plant.command(ws.path)} && echo planted`);
    expect(planted.stdout).toBe("planted\n");
    await sandbox.stop();

    // The owner's plain git, in the workspace and in each directory the plant was for, runs nothing.
    for (const dir of plant.statusIn) {
      try {
        hostGit(join(ws.path, dir), ["status"]);
      } catch {
        // A git that refuses to run is fine; what matters is that it ran nothing planted.
      }
    }
    expect(ran(ws.path)).toEqual([]);

    // Each moved item is in the quarantine, named in the printed lines, and gone from the workspace.
    const report = lines.join("\n");
    const restoreLine = lines.find((l) => /harness restore-git \S+$/.test(l)) ?? "";
    expect(restoreLine, report).not.toBe("");
    const id = /restore-git (\S+)$/.exec(restoreLine)?.[1] as string;
    const quarantine = join(stateHome, "harness", "git-aside", id);
    const manifest = JSON.parse(readFileSync(join(quarantine, "manifest.json"), "utf8")) as {
      items: { path: string; stored: string }[];
    };
    const stored = new Map(manifest.items.map((item) => [item.path, join(quarantine, item.stored)]));
    const snapshots = new Map<string, Record<string, string>>();
    for (const path of plant.moved) {
      expect(report).toContain(`moved aside ${path}`);
      expect(existsSync(join(ws.path, path))).toBe(false);
      const at = stored.get(path);
      expect(at, `${path} in ${[...stored.keys()].join(", ")}`).toBeDefined();
      snapshots.set(path, tree(at as string));
    }

    // The printed command puts every item back, byte for byte.
    runRestore(restoreLine);
    for (const path of plant.moved) expect(tree(join(ws.path, path))).toEqual(snapshots.get(path));
    if (plant.ranBefore) {
      // Proof the plant was real: with it back, the same plain git runs it.
      for (const dir of plant.statusIn) {
        try {
          hostGit(join(ws.path, dir), ["status"]);
        } catch {}
      }
      expect(ran(ws.path)).not.toEqual([]);
    }
  });
});

async function removeContainer(id: string): Promise<void> {
  execFileSync("docker", ["rm", "-f", "-v", id], { stdio: "ignore" });
}
