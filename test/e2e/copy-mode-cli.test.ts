import { chownSync, lstatSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace, TEST_GID, TEST_UID } from "../support/workspace.js";

function put(root: string, path: string, content: string): void {
  writeFileSync(join(root, path), content);
  if (process.getuid?.() === 0) chownSync(join(root, path), TEST_UID, TEST_GID);
}

async function copyContainersOf(workspace: string): Promise<number> {
  const found = await new Docker().listContainers({
    all: true,
    filters: { label: [`dev.harness.workspace=copy:${workspace}`] },
  });
  return found.length;
}

/** `harness exec --isolation copy` through the built CLI: review on stderr, apply only when asked. */
describe.skipIf(skipDocker)("copy mode on the command line", () => {
  it("shows the changes and leaves the host alone without --apply (stdin is not a terminal), keeping the copy", async () => {
    using ws = makeWorkspace();
    put(ws.path, "a.txt", "before\n");
    const run = await runCli([
      "exec",
      "--isolation",
      "copy",
      "-w",
      ws.path,
      "--",
      "echo after > a.txt; echo new > b.txt; cat a.txt",
    ]);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe("after\n");
    expect(run.stderr).toContain("M a.txt\nA b.txt\n2 changes: 1 added, 1 modified, 0 deleted\n");
    expect(run.stderr).toContain("-before\n+after\n");
    expect(run.stderr).toContain("changes not applied (pass --apply to apply them)");
    expect(readFileSync(join(ws.path, "a.txt"), "utf8")).toBe("before\n");
    expect(() => lstatSync(join(ws.path, "b.txt"))).toThrow();
    // Nobody decided: the copy is kept (test/faults/kept-copy-faults.test.ts lands and drops one).
    const id = /the sandbox's copy is kept as (\S+):/.exec(run.stderr)?.[1];
    expect(await copyContainersOf(ws.path)).toBe(1);
    expect((await runCli(["rm", id ?? ""])).code).toBe(0);
    expect(await copyContainersOf(ws.path)).toBe(0);
  });

  it("applies with --apply, reports refusals by name, and keeps the command's exit code", async () => {
    using ws = makeWorkspace();
    put(ws.path, "a.txt", "before\n");
    const run = await runCli([
      "exec",
      "--isolation",
      "copy",
      "--apply",
      "-w",
      ws.path,
      "--",
      "echo after > a.txt; ln -s /etc/passwd pw; exit 3",
    ]);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain("applied to");
    expect(run.stderr).toContain("harness: refused pw: symlink to an absolute path (/etc/passwd)\n");
    expect(readFileSync(join(ws.path, "a.txt"), "utf8")).toBe("after\n");
    expect(() => lstatSync(join(ws.path, "pw"))).toThrow();
    expect(await copyContainersOf(ws.path)).toBe(0);
  });

  it("rejects an unknown isolation and a bad copy limit with exit 2", async () => {
    using ws = makeWorkspace();
    const bad = await runCli(["exec", "--isolation", "tmpfs", "-w", ws.path, "--", "true"]);
    expect(bad.code).toBe(2);
    const limit = await runCli([
      "exec",
      "--isolation",
      "copy",
      "--copy-limit",
      "lots",
      "-w",
      ws.path,
      "--",
      "true",
    ]);
    expect(limit).toMatchObject({
      code: 2,
      stderr: "harness: --copy-limit must look like 500m or 2g, got 'lots'\n",
    });
  });
});
