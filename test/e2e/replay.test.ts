import {
  chmodSync,
  chownSync,
  copyFileSync,
  existsSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { listHarnessContainers } from "../../src/sandbox/docker/container/container-registry.js";
import { connectDocker } from "../../src/sandbox/docker/engine/docker-client.js";
import { skipDocker } from "../support/docker-available.js";
import { runCli } from "../support/run-cli.js";
import { makeStateHome, runIdAt } from "../support/run-fixtures.js";
import { makeWorkspace, TEST_GID, TEST_UID } from "../support/workspace.js";

const EXAMPLE = fileURLToPath(new URL("../../examples/hello/transcript.jsonl", import.meta.url));
const isRoot = process.getuid?.() === 0;

async function containersFor(workspace: string) {
  return listHarnessContainers(await connectDocker(), workspace);
}

/** The recorded hello example, replayed through the built CLI and a real Docker sandbox. */
describe.skipIf(skipDocker)("harness replay end to end", () => {
  it("reproduces the hello example in a fresh temporary workspace, then removes it and its container", async () => {
    const run = await runCli(["replay", EXAMPLE]);
    expect(run.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^ +1 ✓ printf 'print\("Hello, Agent Harness"\)\\n' > hello\.py$/m);
    expect(run.stdout).toMatch(/^ +2 ✓ python3 hello\.py$/m);
    expect(run.stdout).toContain("reproduced: 2 of 2 replayed calls matched");
    const workspace = /^workspace: (\S+) \(temporary, removed/m.exec(run.stdout)?.[1] ?? "";
    expect(workspace).toMatch(/harness-replay-/);
    expect(run.stderr).toContain(`in ${workspace}`);
    expect(existsSync(workspace)).toBe(false);
    expect(await containersFor(workspace)).toEqual([]);
  });

  it("replays a past run named by last or its id, as well as a transcript path", async () => {
    using state = makeStateHome();
    const id = runIdAt(Date.now() - 60_000);
    copyFileSync(EXAMPLE, join(state.runs, `${id}.jsonl`));
    for (const name of ["last", id.slice(-12)]) {
      const run = await runCli(["replay", name], { env: { XDG_STATE_HOME: state.home } });
      expect(run.code).toBe(0);
      expect(run.stderr).toContain(`from ${join(state.runs, `${id}.jsonl`)}`);
      expect(run.stdout).toContain("reproduced: 2 of 2 replayed calls matched");
    }
    const none = await runCli(["replay", "last~1"], { env: { XDG_STATE_HOME: state.home } });
    expect(none.code).toBe(2);
    expect(none.stderr).toBe("harness: no run 'last~1': there is 1 run (last~0 is the oldest)\n");
  });

  it("keeps the workspace with --keep and reports as one JSON object", async () => {
    const run = await runCli(["replay", "--keep", "--output-format", "json", EXAMPLE]);
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout) as {
      workspace: string;
      workspaceKept: boolean;
      reproduced: boolean;
      summary: Record<string, number>;
      calls: Array<{ status: string }>;
    };
    try {
      expect(report).toMatchObject({ workspaceKept: true, reproduced: true });
      expect(report.summary).toEqual({ total: 2, matched: 2, diverged: 0, skipped: 0 });
      expect(report.calls.map((c) => c.status)).toEqual(["match", "match"]);
      const hello = join(report.workspace, "hello.py");
      expect(readFileSync(hello, "utf8")).toBe('print("Hello, Agent Harness")\n');
      // Run as root, harness hands the temporary workspace to a normal user: never root in the sandbox.
      if (isRoot) expect(statSync(report.workspace).uid).toBe(TEST_UID);
    } finally {
      rmSync(report.workspace, { recursive: true, force: true });
    }
  });

  it("exits 5 and shows the divergence when the workspace makes a recorded output differ", async () => {
    using ws = makeWorkspace();
    const hello = join(ws.path, "hello.py");
    writeFileSync(hello, 'print("Hello, World")\n');
    if (isRoot) chownSync(hello, TEST_UID, TEST_GID);
    // Read-only for its owner, the sandbox user: the recorded write fails, the old file runs.
    chmodSync(hello, 0o444);
    const run = await runCli(["replay", "--workspace", ws.path, EXAMPLE]);
    expect(run.code).toBe(5);
    expect(run.stdout).toMatch(/^ +1 ✗ printf/m);
    expect(run.stdout).toContain("recorded exit 0, replayed exit 1");
    expect(run.stdout).toMatch(/^ +\+bash: .*hello\.py: Permission denied$/m);
    expect(run.stdout).toMatch(/^ +2 ✗ python3 hello\.py$/m);
    expect(run.stdout).toMatch(/^ +-Hello, Agent Harness$/m);
    expect(run.stdout).toMatch(/^ +\+Hello, World$/m);
    expect(run.stdout).toContain("diverged: 2 of 2 replayed calls differed (calls 1, 2)");
    expect(run.stdout).toContain(`workspace: ${ws.path}\n`);
    expect(readFileSync(hello, "utf8")).toBe('print("Hello, World")\n');
    expect(await containersFor(ws.path)).toEqual([]);
  });
});

describe("harness replay usage errors", () => {
  it("exits 2 with the line number for a malformed transcript, and for a missing one", async () => {
    using ws = makeWorkspace();
    const bad = join(ws.path, "bad.jsonl");
    writeFileSync(bad, `${readFileSync(EXAMPLE, "utf8").split("\n").slice(0, 4).join("\n")}\n{"type":\n`);
    const run = await runCli(["replay", bad]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^harness: transcript '.*bad\.jsonl': line 5: not valid JSON/m);
    const missing = await runCli(["replay", join(ws.path, "none.jsonl")]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/cannot read transcript '.*none\.jsonl': no such file/);
  });
});
