/**
 * Checkpoints through the built CLI, a real Docker sandbox and the fake Messages API: a three-step
 * run (create a.txt, create b.txt, change a.txt), then `runs diff --step 3` shows only a.txt's change,
 * `runs restore --step 1` gives a.txt as first written and no b.txt, and `run --fork RUN@2` sends the
 * model the first two steps and starts in a workspace holding both files as after step 2; `replay
 * --from 2` replays only the third call, from checkpoint 2. What .gitignore ignores is left out and
 * named by a restore, unless `--checkpoints all`.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { useFakeApi } from "../support/fake-api-fixture.js";
import { textReply, toolUseReply } from "../support/fake-messages-api.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";

let stateHome: string;
let scratch: string;
beforeEach(() => {
  stateHome = mkdtempSync(join(tmpdir(), "harness-checkpoints-state-"));
  scratch = mkdtempSync(join(tmpdir(), "harness-checkpoints-out-"));
});
afterEach(() => {
  rmSync(stateHome, { recursive: true, force: true });
  rmSync(scratch, { recursive: true, force: true });
});

const runsDir = () => join(stateHome, "harness", "runs");
type Row = Record<string, unknown> & { type: string };
const records = (path: string): Row[] =>
  readFileSync(path, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Row);

describe.skipIf(skipDocker)("checkpoints end to end", () => {
  const fake = useFakeApi();
  const env = () => ({ ...fake.env, XDG_STATE_HOME: stateHome });

  it("diffs a step, restores an earlier one and forks from a step", async () => {
    using ws = makeWorkspace();
    fake.api.enqueue(
      toolUseReply("bash", { command: "echo one > a.txt" }, undefined, "toolu_1"),
      toolUseReply("bash", { command: "echo bee > b.txt" }, undefined, "toolu_2"),
      toolUseReply("bash", { command: "cat b.txt && echo two >> a.txt" }, undefined, "toolu_3"),
      textReply("Done."),
    );
    const run = await runCli(["run", "--workspace", ws.path, "write the files"], { env: env() });
    expect(run.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(run.code).toBe(0);
    const [name] = readdirSync(runsDir()).filter((n) => n.endsWith(".jsonl"));
    const runId = (name ?? "").slice(0, -".jsonl".length);
    const steps = records(join(runsDir(), name ?? "")).filter((row) => row.type === "checkpoint");
    expect(steps.map((row) => [row["step"], row["added"], row["changed"], row["removed"]])).toEqual([
      [0, 0, 0, 0],
      [1, 1, 0, 0],
      [2, 1, 0, 0],
      [3, 0, 1, 0],
    ]);

    const diff = await runCli(["runs", "diff", runId, "--step", "3"], { env: env() });
    expect(diff.code).toBe(0);
    expect(diff.stdout).toContain("--- a/a.txt\n+++ b/a.txt\n");
    expect(diff.stdout).toContain(" one\n+two\n");
    expect(diff.stdout).not.toContain("b.txt");
    const json = await runCli(["runs", "diff", runId, "--step", "3", "--output-format", "json"], {
      env: env(),
    });
    const parsed = JSON.parse(json.stdout) as { changes: { path: string; kind: string }[] };
    expect(parsed.changes.map((c) => [c.kind, c.path])).toEqual([["changed", "a.txt"]]);

    const restored = join(scratch, "step1");
    const restore = await runCli(["runs", "restore", runId, "--step", "1", "--to", restored], { env: env() });
    expect(restore.stderr).toBe("");
    expect(restore.code).toBe(0);
    expect(readFileSync(join(restored, "a.txt"), "utf8")).toBe("one\n");
    expect(existsSync(join(restored, "b.txt"))).toBe(false);

    // Replay from step 2: only the third call, in checkpoint 2 (a.txt "one", b.txt), so it reproduces.
    const replay = await runCli(["replay", join(runsDir(), name ?? ""), "--from", "2"], { env: env() });
    expect(replay.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(replay.code).toBe(0);
    expect(replay.stdout).toMatch(/^ +3 ✓ cat b\.txt && echo two >> a\.txt$/m);
    expect(replay.stdout).not.toMatch(/echo one/);

    const show = await runCli(["runs", "show", runId], { env: env() });
    expect(show.stdout).toMatch(/echo two >> a\.txt\n.*\n +files: 1 changed/);

    const forked = join(scratch, "fork");
    fake.api.enqueue(
      toolUseReply("bash", { command: "cat a.txt b.txt" }, undefined, "toolu_4"),
      textReply("Ok."),
    );
    const fork = await runCli(["run", "--fork", `${runId}@2`, "--workspace", forked, "go on"], {
      env: env(),
    });
    expect(fork.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(fork.code).toBe(0);
    expect(fork.stderr).toContain(`forked from run ${runId} at step 2`);
    const sent = JSON.stringify(fake.api.requests[4]?.body.messages ?? []);
    expect(sent).toContain('"tool_use_id":"toolu_1"');
    expect(sent).toContain('"tool_use_id":"toolu_2"');
    expect(sent).not.toContain("toolu_3");
    expect(JSON.stringify(fake.api.requests[4]?.body.messages.at(-1))).toContain("go on");
    // The fork's command saw the files as after step 2.
    expect(JSON.stringify(fake.api.requests[5]?.body.messages.at(-1))).toContain("one\\nbee\\n");
    expect(readFileSync(join(forked, "a.txt"), "utf8")).toBe("one\n");
    const forkTranscript = readdirSync(runsDir()).filter((n) => n.endsWith(".jsonl") && n !== name);
    const start = records(join(runsDir(), forkTranscript[0] ?? "")).find((row) => row.type === "run_start");
    expect(start?.["forkOf"]).toEqual({ run: runId, step: 2 });
  });

  it("checkpoints copy mode's copy: the host workspace stays, the steps are in the checkpoints", async () => {
    using ws = makeWorkspace();
    fake.api.enqueue(
      toolUseReply("bash", { command: "echo one > a.txt" }, undefined, "toolu_c1"),
      toolUseReply("bash", { command: "echo two >> a.txt && rm -f keep.txt" }, undefined, "toolu_c2"),
      textReply("Done."),
    );
    const { writeFileSync } = await import("node:fs");
    writeFileSync(join(ws.path, "keep.txt"), "kept\n");
    const run = await runCli(["run", "--isolation", "copy", "--no-apply", "--workspace", ws.path, "edit"], {
      env: env(),
    });
    expect(run.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(run.code).toBe(0);
    expect(existsSync(join(ws.path, "a.txt"))).toBe(false);
    const [name] = readdirSync(runsDir()).filter((n) => n.endsWith(".jsonl"));
    const runId = (name ?? "").slice(0, -".jsonl".length);
    const diff = await runCli(["runs", "diff", runId, "--step", "2", "--output-format", "json"], {
      env: env(),
    });
    const parsed = JSON.parse(diff.stdout) as { changes: { path: string; kind: string }[] };
    expect(parsed.changes.map((c) => [c.kind, c.path])).toEqual([
      ["changed", "a.txt"],
      ["removed", "keep.txt"],
    ]);
    const restored = join(scratch, "copy-step1");
    expect(
      (await runCli(["runs", "restore", runId, "--step", "1", "--to", restored], { env: env() })).code,
    ).toBe(0);
    expect(readFileSync(join(restored, "a.txt"), "utf8")).toBe("one\n");
    expect(readFileSync(join(restored, "keep.txt"), "utf8")).toBe("kept\n");
  });

  it("leaves out what .gitignore ignores, says so on restore, and keeps it with --checkpoints all", async () => {
    using ws = makeWorkspace();
    fake.api.enqueue(
      toolUseReply(
        "bash",
        {
          command:
            "mkdir -p node_modules/pkg && echo m > node_modules/pkg/index.js && echo 'node_modules/' > .gitignore && echo a > a.txt",
        },
        undefined,
        "toolu_g1",
      ),
      toolUseReply(
        "bash",
        { command: "echo n > node_modules/pkg/new.js && echo b >> a.txt" },
        undefined,
        "toolu_g2",
      ),
      textReply("Done."),
    );
    const run = await runCli(["run", "--workspace", ws.path, "install"], { env: env() });
    expect(run.code).toBe(0);
    const [name] = readdirSync(runsDir()).filter((n) => n.endsWith(".jsonl"));
    const runId = (name ?? "").slice(0, -".jsonl".length);
    const steps = readFileSync(join(runsDir(), `${runId}.checkpoints`, "steps.jsonl"), "utf8");
    expect(steps).not.toContain("index.js");
    // Named once, on the step that first left it out.
    expect(steps.match(/"notCheckpointed":\{"paths":\["node_modules"\]\}/g)).toHaveLength(1);

    const restored = join(scratch, "step2");
    const restore = await runCli(["runs", "restore", runId, "--step", "2", "--to", restored], { env: env() });
    expect(restore.code).toBe(0);
    expect(restore.stderr).toBe(
      "harness: not restored: node_modules (ignored by .gitignore rules, so not checkpointed; --checkpoints all keeps them)\n",
    );
    expect(readFileSync(join(restored, "a.txt"), "utf8")).toBe("a\nb\n");
    expect(readdirSync(restored).sort()).toEqual([".gitignore", "a.txt"]);
    // The workspace's own ignored files are left as they are.
    expect(readdirSync(join(ws.path, "node_modules", "pkg")).sort()).toEqual(["index.js", "new.js"]);

    // Step 0 had nothing ignored: its restore says nothing of node_modules.
    const empty = await runCli(["runs", "restore", runId, "--step", "0", "--to", join(scratch, "step0")], {
      env: env(),
    });
    expect(empty.stderr).toBe("");

    using all = makeWorkspace();
    fake.api.enqueue(
      toolUseReply(
        "bash",
        {
          command:
            "mkdir -p node_modules/pkg && echo m > node_modules/pkg/index.js && echo 'node_modules/' > .gitignore",
        },
        undefined,
        "toolu_g3",
      ),
      textReply("Done."),
    );
    const kept = await runCli(["run", "--checkpoints", "all", "--workspace", all.path, "install"], {
      env: env(),
    });
    expect(kept.code).toBe(0);
    const [second] = readdirSync(runsDir()).filter((n) => n.endsWith(".jsonl") && n !== name);
    const everything = join(scratch, "all");
    const restoreAll = await runCli(
      ["runs", "restore", (second ?? "").slice(0, -".jsonl".length), "--step", "1", "--to", everything],
      { env: env() },
    );
    expect(restoreAll.stderr).toBe("");
    expect(readFileSync(join(everything, "node_modules", "pkg", "index.js"), "utf8")).toBe("m\n");
  });

  it("takes no checkpoints with --no-checkpoints", async () => {
    using ws = makeWorkspace();
    fake.api.enqueue(
      toolUseReply("bash", { command: "echo x > x.txt" }, undefined, "toolu_x"),
      textReply("Ok."),
    );
    const run = await runCli(["run", "--no-checkpoints", "--workspace", ws.path, "write x"], { env: env() });
    expect(run.code).toBe(0);
    expect(readdirSync(runsDir()).some((n) => n.endsWith(".checkpoints"))).toBe(false);
  });
});
