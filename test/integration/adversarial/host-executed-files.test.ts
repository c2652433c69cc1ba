import { execFileSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { skipDocker } from "../../support/docker-available.js";
import { makeWorkspace, TEST_GID, TEST_UID } from "../../support/workspace.js";

function chownWorkspace(ws: string): void {
  if (process.getuid?.() === 0) execFileSync("chown", ["-R", "-h", `${TEST_UID}:${TEST_GID}`, ws]);
}

/** Host git as a user would run it (no protective flags); safe.directory because tests may run as root. */
function hostGit(ws: string, args: string[], protective = false): void {
  const safe = protective ? ["-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null"] : [];
  const who = ["-c", "safe.directory=*", "-c", "user.name=host", "-c", "user.email=host@example.invalid"];
  execFileSync("git", [...who, ...safe, "-C", ws, ...args], { stdio: "ignore" });
}

/** A committed repository with `.env`, `.envrc` and `.vscode`, owned by the sandbox user. */
function makeProject(ws: string): void {
  hostGit(ws, ["-c", "init.defaultBranch=main", "init", "-q"]);
  writeFileSync(join(ws, "README.md"), "hello\n");
  writeFileSync(join(ws, ".envrc"), "export PROJECT=1\n");
  writeFileSync(join(ws, ".env"), "MODEL_ID=some-model\n");
  mkdirSync(join(ws, ".vscode"));
  writeFileSync(join(ws, ".vscode/settings.json"), "{}\n");
  hostGit(ws, ["add", "-A"]);
  hostGit(ws, ["commit", "-qm", "initial"]);
  if (process.getuid?.() === 0) execFileSync("chown", ["-R", `${TEST_UID}:${TEST_GID}`, ws]);
}

/** What a task plants for the host to run later; each `touch` marks that the host ran it. */
function plants(ws: string): [string, string][] {
  return [
    ["git-config-fsmonitor", `git config core.fsmonitor 'touch ${ws}/RAN-fsmonitor'`],
    [
      "pre-commit-hook",
      `printf '#!/bin/sh\\ntouch ${ws}/RAN-hook\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit`,
    ],
    ["envrc", `echo 'touch ${ws}/RAN-envrc' >> .envrc`],
    // harness loads .env from the current directory: this would send the next run's API key elsewhere.
    ["dotenv-base-url", "echo ANTHROPIC_BASE_URL=http://127.0.0.1:9/ >> .env"],
    ["vscode-task", `echo '{"tasks":[{"runOptions":{"runOn":"folderOpen"}}]}' > .vscode/tasks.json`],
  ];
}

/** Ways around read-only mounts: rename or replace them, or move their parent aside. */
const BYPASSES: [string, string][] = [
  ["config-append", "printf '[core]\\n\\tfsmonitor = x\\n' >> .git/config"],
  ["config-rename-over", "printf '[core]\\n' > .git/config.new && mv -f .git/config.new .git/config"],
  ["hooks-move-aside", "mv .git/hooks .git/hooks.old"],
  ["git-dir-move-aside", "mv .git .git.old"],
  ["vscode-move-aside", "mv .vscode .vscode.old"],
  ["envrc-remove", "rm -f .envrc"],
];

function script(attempts: [string, string][]): string {
  return attempts
    .map(([name, cmd]) => `(${cmd}) >/dev/null 2>&1 && echo "${name} written" || echo "${name} refused"`)
    .join("\n");
}

const snapshot = (ws: string) => ({
  config: readFileSync(join(ws, ".git/config"), "utf8"),
  hooks: readdirSync(join(ws, ".git/hooks")).sort(),
  envrc: readFileSync(join(ws, ".envrc"), "utf8"),
  dotenv: readFileSync(join(ws, ".env"), "utf8"),
  vscode: readdirSync(join(ws, ".vscode")).sort(),
});

describe.skipIf(skipDocker)("adversarial: files the host runs later", () => {
  it("refuses to plant git fsmonitor, hooks, .env, .envrc or .vscode tasks; with --no-protect they land and run", async () => {
    using ws = makeWorkspace();
    makeProject(ws.path);
    const before = snapshot(ws.path);
    // Removed by the second open below (other settings), or on dispose if the test fails before it.
    await using protectedBox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const attempts = [...plants(ws.path), ...BYPASSES];
    const refused = await protectedBox.exec(script(attempts));
    expect(refused.stdout.trim().split("\n")).toEqual(attempts.map(([name]) => `${name} refused`));
    // The agent's own git work still goes through.
    const work = await protectedBox.exec(
      "echo more >> README.md && git add -A && git -c user.name=a -c user.email=a@example.invalid commit -qm work && git rev-list --count HEAD",
    );
    expect(work.stdout).toBe("2\n");
    expect(snapshot(ws.path)).toEqual(before);
    hostGit(ws.path, ["status"]);
    hostGit(ws.path, ["commit", "-q", "--allow-empty", "-m", "host"]);
    expect(readdirSync(ws.path).filter((f) => f.startsWith("RAN-"))).toEqual([]);

    // Protections are part of the container's settings: turning them off replaces the container.
    await using open = await DockerSandbox.open({
      workspace: ws.path,
      protect: { disabled: true },
      removeOnStop: true,
    });
    expect(open.acquired).toBe("created");
    const planted = await open.exec(script(plants(ws.path)));
    expect(planted.stdout.trim().split("\n")).toEqual(plants(ws.path).map(([name]) => `${name} written`));
    // The rule for host-side git: these two flags keep planted code from running...
    hostGit(ws.path, ["status"], true);
    hostGit(ws.path, ["commit", "-q", "--allow-empty", "-m", "safe"], true);
    expect(existsSync(join(ws.path, "RAN-fsmonitor")) || existsSync(join(ws.path, "RAN-hook"))).toBe(false);
    // ...and without them an ordinary `git status` / `git commit` on the host runs it.
    hostGit(ws.path, ["status"]);
    expect(existsSync(join(ws.path, "RAN-fsmonitor"))).toBe(true);
    hostGit(ws.path, ["commit", "-q", "--allow-empty", "-m", "plain"]);
    expect(existsSync(join(ws.path, "RAN-hook"))).toBe(true);
  });

  it("never mounts a symlink (it could name any host path), says so, and protects --protect paths", async () => {
    using ws = makeWorkspace();
    symlinkSync("/etc", join(ws.path, ".vscode"));
    writeFileSync(join(ws.path, "Makefile"), "all:\n");
    if (process.getuid?.() === 0) execFileSync("chown", ["-R", "-h", `${TEST_UID}:${TEST_GID}`, ws.path]);
    const notes: string[] = [];
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      protect: { extraPaths: ["Makefile"] },
      onProgress: (line) => notes.push(line),
    });
    expect(notes).toContain("not protecting .vscode: .vscode is a symlink, and a symlink is never mounted");
    const info = await new Docker().getContainer(sandbox.containerId).inspect();
    expect(info.Mounts.map((m) => `${m.Destination}:${m.RW ? "rw" : "ro"}`).sort()).toEqual([
      "/workspace/Makefile:ro",
      "/workspace:rw",
    ]);
    // Inside, the link resolves in the container's own file system, not the host's /etc.
    expect((await sandbox.exec("cat .vscode/hostname")).stdout).toBe(`${sandbox.containerId.slice(0, 12)}\n`);
    const make = await sandbox.exec("echo 'all: ; touch owned' >> Makefile");
    expect(make.stderr).toMatch(/Read-only file system/);
    expect(readFileSync(join(ws.path, "Makefile"), "utf8")).toBe("all:\n");
  });

  it("pins the directories above a nested --protect path: moving .github aside fails, the host file stays", async () => {
    using ws = makeWorkspace();
    mkdirSync(join(ws.path, ".github/workflows"), { recursive: true });
    writeFileSync(join(ws.path, ".github/workflows/ci.yml"), "on: push\n");
    chownWorkspace(ws.path);
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      protect: { extraPaths: [".github/workflows"] },
    });
    const info = await new Docker().getContainer(sandbox.containerId).inspect();
    expect(info.Mounts.map((m) => `${m.Destination}:${m.RW ? "rw" : "ro"}`).sort()).toEqual([
      "/workspace/.github/workflows:ro",
      "/workspace/.github:rw",
      "/workspace:rw",
    ]);
    const bypass = await sandbox.exec(
      "mv .github .github-old && mkdir -p .github/workflows && echo evil > .github/workflows/ci.yml",
    );
    expect(bypass.exitCode).not.toBe(0);
    expect(bypass.stderr).toMatch(/Device or resource busy/);
    const others = await sandbox.exec(
      "(rm -rf .github; echo evil > .github/workflows/ci.yml) 2>&1; echo 'version: 2' > .github/dependabot.yml && cat .github/dependabot.yml",
    );
    expect(others.stdout).toMatch(/Read-only file system|Device or resource busy/);
    expect(others.stdout).toMatch(/version: 2\n$/);
    expect(readFileSync(join(ws.path, ".github/workflows/ci.yml"), "utf8")).toBe("on: push\n");
    expect(readdirSync(ws.path)).toEqual([".github"]);
    expect(readdirSync(join(ws.path, ".github")).sort()).toEqual(["dependabot.yml", "workflows"]);
  });

  it("checks the protected paths again when a recovery starts the container: a swapped one is never used", async () => {
    using ws = makeWorkspace();
    using elsewhere = makeWorkspace("harness-secret-");
    writeFileSync(join(ws.path, ".envrc"), "export PROJECT=1\n");
    writeFileSync(join(elsewhere.path, "secret"), "host secret\n");
    chownWorkspace(ws.path);
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    expect((await sandbox.exec("cat .envrc")).stdout).toBe("export PROJECT=1\n");
    // Swapped on the host while the container is down: Docker would mount the link's target at start.
    const docker = new Docker();
    const id = sandbox.containerId;
    await docker.getContainer(id).stop({ t: 0 });
    renameSync(join(ws.path, ".envrc"), join(ws.path, ".envrc.old"));
    symlinkSync(join(elsewhere.path, "secret"), join(ws.path, ".envrc"));
    await expect(sandbox.exec("cat .envrc")).rejects.toThrow(
      /'\.envrc' in .* changed before the sandbox container was started; it was removed/,
    );
    await expect(docker.getContainer(id).inspect()).rejects.toMatchObject({ statusCode: 404 });
  });
});
