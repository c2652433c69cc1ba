import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { copyOf } from "../../support/copied.js";
import { skipDocker } from "../../support/docker-available.js";
import { makeWorkspace, TEST_GID, TEST_UID } from "../../support/workspace.js";

/** Host git as its owner would run it: no protective flags. safe.directory because tests may run as root. */
function hostGit(ws: string, args: string[]): string {
  const who = ["-c", "safe.directory=*", "-c", "user.name=host", "-c", "user.email=host@example.invalid"];
  return execFileSync("git", [...who, "-C", ws, ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });
}

function chownAll(path: string): void {
  if (process.getuid?.() === 0) execFileSync("chown", ["-R", "-h", `${TEST_UID}:${TEST_GID}`, path]);
}

/** A committed repository with a submodule (so `.git/modules/lib` exists), owned by the sandbox user. */
function makeProject(ws: string, lib: string): void {
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
  writeFileSync(join(ws, ".git/config.worktree"), "");
  writeFileSync(join(ws, ".git/objects/info/alternates"), "");
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

  it("reports every way it planted what git would run, after ending the run's background processes", async () => {
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
    expect(report).toMatch(/through which git on this machine can run commands/);
    for (const path of [
      ".git/commondir",
      "sub/.git",
      "sub/.git/config",
      "vendor/dep/.git",
      ".git/modules/lib/objects/info/http-alternates",
    ]) {
      expect(report).toContain(`created ${path}`);
    }
    // The run ended its background process: nothing lands after it.
    await new Promise((resolve) => setTimeout(resolve, 4000));
    expect(existsSync(join(ws.path, "late-write"))).toBe(false);
    expect(existsSync(join(ws.path, ".git/modules/lib/commondir"))).toBe(false);
    // What was reported is real: the owner's plain `git status` runs the planted commands.
    hostGit(ws.path, ["status"]);
    expect(ran(ws.path)).toEqual(expect.arrayContaining(["RAN-commondir"]));
    await removeContainer(sandbox.containerId);
  });

  it("reports a repository the task creates in a workspace that had none", async () => {
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
    expect(lines.join("\n")).toMatch(/created \.git\n.*created \.git\/config/s);
  });

  it("says nothing when the run left git's files alone", async () => {
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
    expect(lines.filter((l) => /git on this machine/.test(l))).toEqual([]);
  });
});

async function removeContainer(id: string): Promise<void> {
  execFileSync("docker", ["rm", "-f", "-v", id], { stdio: "ignore" });
}
