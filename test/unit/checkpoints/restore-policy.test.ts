import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Manifest } from "../../../src/checkpoints/checkpoint-types.js";
import { restoreManifest } from "../../../src/checkpoints/restore.js";
import { planRestore } from "../../../src/checkpoints/restore-policy.js";
import { checkpointDirs, snapshotOf } from "./checkpoints-fixture.js";

let dirs: ReturnType<typeof checkpointDirs>;
beforeEach(() => {
  dirs = checkpointDirs();
});
afterEach(() => rmSync(dirs.base, { recursive: true, force: true }));

function git(dir: string, ...args: string[]): string {
  const who = ["-c", "safe.directory=*", "-c", "user.name=u", "-c", "user.email=u@example.invalid"];
  return execFileSync("git", [...who, "-C", dir, ...args], { encoding: "utf8", stdio: "pipe" });
}

const sh = (command: string) => execFileSync("sh", ["-ec", command], { cwd: dirs.root, stdio: "pipe" });

async function manifest(): Promise<Manifest> {
  return (await snapshotOf(dirs)).manifest as Manifest;
}

describe("planRestore", () => {
  it("leaves out what the sandbox made of git's surface and of protected paths, and restores the rest", async () => {
    git(dirs.root, "-c", "init.defaultBranch=main", "init", "-q");
    writeFileSync(join(dirs.root, "README.md"), "hello\n");
    mkdirSync(join(dirs.root, ".vscode"));
    writeFileSync(join(dirs.root, ".vscode/settings.json"), "{}\n");
    git(dirs.root, "add", "-A");
    git(dirs.root, "commit", "-qm", "initial");
    const baseline = await manifest();
    writeFileSync(join(dirs.base, "config-before"), readFileSync(join(dirs.root, ".git/config")));
    const markers = join(dirs.base, "markers");
    mkdirSync(markers);
    const fsmonitor = (tag: string) => `printf '[core]\\n\\tfsmonitor = touch ${markers}/RAN-${tag}\\n'`;
    sh(
      [
        `git init -q sub && git -C sub config core.fsmonitor 'touch ${markers}/RAN-nested'`,
        `git init -q --bare docs && git -C docs config core.bare false && git -C docs config core.worktree . && git -C docs config core.fsmonitor 'touch ${markers}/RAN-docs'`,
        "echo '{\"tasks\":[]}' > .vscode/tasks.json && echo 'export X=1' > .envrc",
        "echo ANTHROPIC_BASE_URL=http://127.0.0.1:9 > .env && mkdir pkg && echo A=1 > pkg/.env",
        "echo more >> README.md && git -c user.name=a -c user.email=a@example.invalid commit -qam work",
        // Last: with it, every git command here reads .evil's config.
        `mkdir .evil && cp -r .git/objects .git/refs .git/HEAD .evil/ && ${fsmonitor("commondir")} > .evil/config && echo ../.evil > .git/commondir`,
        `${fsmonitor("config")} >> .git/config && echo '{"evil":1}' > .vscode/settings.json`,
      ].join(" && "),
    );
    const step = await manifest();
    const configBefore = readFileSync(join(dirs.base, "config-before"), "utf8");
    const target = join(dirs.base, "restored");
    const plan = await planRestore(baseline, step, dirs.run, target);
    expect(plan.withheld.map((w) => w.path)).toEqual([
      ".envrc",
      ".evil/HEAD",
      ".evil/config",
      ".git/commondir",
      ".git/config",
      ".vscode/settings.json",
      ".vscode/tasks.json",
      "docs/HEAD",
      "docs/config",
      "docs/hooks",
      "sub/.git",
    ]);
    expect(plan.withheld.find((w) => w.path === "docs/HEAD")?.reason).toBe(
      "created during the run: git would take docs for a repository",
    );
    expect(plan.sandboxEnvFiles.map((e) => e.path)).toEqual([".env", "pkg/.env"]);

    mkdirSync(target);
    await restoreManifest(step, target, {
      checkpointsDir: dirs.run,
      withheld: plan.withheld.map((w) => w.path),
      replaced: new Map(plan.withheld.flatMap((w) => (w.previous ? [[w.path, w.previous] as const] : []))),
    });
    for (const dir of ["", "sub", "docs"]) {
      try {
        git(join(target, dir), "status");
      } catch {}
    }
    expect(readdirSync(markers)).toEqual([]);
    // What the run did besides is there: its commit, its files, the .env (recorded by the caller).
    expect(git(target, "rev-list", "--count", "HEAD")).toBe("2\n");
    // What the run changed of them is written as the run found it.
    expect(plan.withheld.filter((w) => w.previous).map((w) => w.path)).toEqual([
      ".git/config",
      ".vscode/settings.json",
    ]);
    expect(readFileSync(join(target, ".git/config"), "utf8")).toBe(configBefore);
    expect(readFileSync(join(target, ".vscode/settings.json"), "utf8")).toBe("{}\n");
    expect(existsSync(join(target, ".vscode/tasks.json"))).toBe(false);
    expect(existsSync(join(target, "docs/objects"))).toBe(true);
    expect(readFileSync(join(target, ".env"), "utf8")).toContain("ANTHROPIC_BASE_URL");

    // Restored whole, the same plain git runs all three plants.
    const whole = join(dirs.base, "whole");
    mkdirSync(whole);
    await restoreManifest(step, whole, { checkpointsDir: dirs.run });
    for (const dir of ["", "sub", "docs"]) {
      try {
        git(join(whole, dir), "status");
      } catch {}
    }
    expect(readdirSync(markers).sort()).toEqual(["RAN-commondir", "RAN-docs", "RAN-nested"]);
    rmSync(join(whole, ".git/commondir"));
    git(whole, "status");
    expect(readdirSync(markers)).toContain("RAN-config");
  });

  it("restores whatever the workspace had when the run began, a repository called anything included", async () => {
    sh(
      "git init -q --bare fixtures/remote.git && echo 'export A=1' > .envrc && echo KEY=v > .env && mkdir lib && git -C lib init -q",
    );
    const baseline = await manifest();
    sh("echo x > a.txt");
    const step = await manifest();
    expect(await planRestore(baseline, step, dirs.run, join(dirs.base, "t"))).toEqual({
      withheld: [],
      sandboxEnvFiles: [],
    });
  });
});
