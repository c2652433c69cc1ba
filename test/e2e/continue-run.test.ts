/**
 * `harness run --continue` / `--resume` through the built CLI, a real Docker sandbox and the fake
 * Messages API (which rejects a conversation the real API would): a run continued twice sends the whole
 * history each time, appends to one transcript, and `harness replay` reproduces every call of it.
 */
import { mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { E2E_KEY, E2E_MODEL, useFakeApi } from "../support/fake-api-fixture.js";
import { type FakeMessagesApi, textReply, toolUseReply } from "../support/fake-messages-api.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";

let stateHome: string;
beforeEach(() => {
  stateHome = mkdtempSync(join(tmpdir(), "harness-continue-state-"));
});
afterEach(() => {
  rmSync(stateHome, { recursive: true, force: true });
});

const runsDir = () => join(stateHome, "harness", "runs");

type Row = Record<string, unknown> & { type: string };
const records = (path: string): Row[] =>
  readFileSync(path, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Row);

/** The one transcript in the runs directory. */
function onlyTranscript(): string {
  const names = readdirSync(runsDir()).filter((name) => name.endsWith(".jsonl"));
  expect(names).toHaveLength(1);
  return join(runsDir(), names[0] ?? "");
}

/** The request's messages as JSON text, to look for ids and texts in. */
const requestText = (api: FakeMessagesApi, index: number): string =>
  JSON.stringify(api.requests[index]?.body.messages ?? []);

describe.skipIf(skipDocker)("harness run --continue and --resume end to end", () => {
  const fake = useFakeApi();
  const env = () => ({ ...fake.env, XDG_STATE_HOME: stateHome });

  it("continues a run twice with the whole history, in one transcript that replay reproduces", async () => {
    using ws = makeWorkspace();
    fake.api.enqueue(
      toolUseReply("bash", { command: "echo one > one.txt" }, "Writing.", "toolu_first"),
      textReply("Wrote one.txt."),
    );
    const first = await runCli(["run", "--workspace", ws.path, "write one.txt"], { env: env() });
    expect(first.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(first.code).toBe(0);
    const transcript = onlyTranscript();
    const runId = transcript.slice(runsDir().length + 1, -".jsonl".length);

    // From the workspace itself: --continue finds the run by the current directory.
    fake.api.enqueue(
      toolUseReply("bash", { command: "cat one.txt && echo two > two.txt" }, undefined, "toolu_second"),
      textReply("Wrote two.txt."),
    );
    const second = await runCli(["run", "--continue", "write two.txt"], { env: env(), cwd: ws.path });
    expect(second.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(second.code).toBe(0);
    expect(second.stderr).toContain(
      `harness: continuing run ${runId} in workspace ${realpathSync(ws.path)} (4 messages)`,
    );
    const continued = requestText(fake.api, 2);
    expect(continued).toContain("write one.txt");
    expect(continued).toContain('"id":"toolu_first"');
    expect(continued).toContain('"tool_use_id":"toolu_first"');
    expect(continued).toContain("Wrote one.txt.");
    expect(JSON.stringify(fake.api.requests[2]?.body.messages.at(-1))).toContain("write two.txt");
    expect(JSON.stringify(fake.api.requests[3]?.body.messages.at(-1))).toContain("one");

    fake.api.enqueue(
      toolUseReply("bash", { command: "cat two.txt" }, undefined, "toolu_third"),
      textReply("All there."),
    );
    const third = await runCli(
      ["run", "--continue", "--workspace", ws.path, "--output-format", "json", "check both"],
      { env: env() },
    );
    expect(third.code).toBe(0);
    const result = JSON.parse(third.stdout) as Record<string, unknown>;
    // Fresh limits: only this run's model calls count.
    expect(result).toMatchObject({ subtype: "success", run_id: runId, num_turns: 2, result: "All there." });
    const history = requestText(fake.api, 4);
    for (const id of ["toolu_first", "toolu_second"]) {
      expect(history).toContain(`"id":"${id}"`);
      expect(history).toContain(`"tool_use_id":"${id}"`);
    }
    expect(fake.api.requests).toHaveLength(6);

    expect(onlyTranscript()).toBe(transcript);
    const rows = records(transcript);
    const starts = rows.filter((row) => row.type === "run_start");
    expect(starts.map((row) => row["task"])).toEqual(["write one.txt", "write two.txt", "check both"]);
    expect(new Set(starts.map((row) => row["workspace"]))).toEqual(new Set([starts[0]?.["workspace"]]));
    expect(rows.filter((row) => row.type === "run_end")).toHaveLength(3);
    expect(readFileSync(transcript, "utf8")).not.toContain(E2E_KEY);

    const replay = await runCli(["replay", transcript], { env: env() });
    expect(replay.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(replay.code).toBe(0);
    expect(replay.stdout).toMatch(/^ +1 ✓ echo one > one\.txt$/m);
    expect(replay.stdout).toMatch(/^ +2 ✓ cat one\.txt && echo two > two\.txt$/m);
    expect(replay.stdout).toMatch(/^ +3 ✓ cat two\.txt$/m);
    expect(replay.stdout).toContain("reproduced: 3 of 3 replayed calls matched");
  });

  it("resumes a run by a prefix of its id, in the recorded workspace, from anywhere", async () => {
    using ws = makeWorkspace();
    using elsewhere = makeWorkspace();
    fake.api.enqueue(
      toolUseReply("bash", { command: "echo first > first.txt" }, undefined, "toolu_a"),
      textReply("Done."),
    );
    expect((await runCli(["run", "--workspace", ws.path, "first task"], { env: env() })).code).toBe(0);
    const transcript = onlyTranscript();
    const runId = transcript.slice(runsDir().length + 1, -".jsonl".length);

    fake.api.enqueue(
      toolUseReply("bash", { command: "cat first.txt > second.txt" }, undefined, "toolu_b"),
      textReply("Copied."),
    );
    const resumed = await runCli(["run", "--resume", runId.slice(0, 20), "copy it"], {
      env: env(),
      cwd: elsewhere.path,
    });
    expect(resumed.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(resumed.code).toBe(0);
    expect(requestText(fake.api, 2)).toContain('"tool_use_id":"toolu_a"');
    expect(readFileSync(join(ws.path, "second.txt"), "utf8")).toBe("first\n");
    expect(readdirSync(elsewhere.path)).toEqual([]);
    expect(records(transcript).filter((row) => row.type === "run_start")).toHaveLength(2);

    const wrongPlace = await runCli(["run", "--resume", runId, "--workspace", elsewhere.path, "anything"], {
      env: env(),
    });
    expect(wrongPlace.code).toBe(2);
    expect(wrongPlace.stderr).toMatch(/^harness: --workspace .* is not the workspace of run /);
    expect(fake.api.requests).toHaveLength(4);
  });
});

describe.skipIf(skipDocker)("harness run --continue with thinking: what the transcript kept of it", () => {
  const fake = useFakeApi();
  const env = () => ({ ...fake.env, XDG_STATE_HOME: stateHome });
  const printedKey = "sk-ant-api03-ZyXw9876543210";

  it("sends back a thinking block that mentions an auth header, byte for byte", async () => {
    using ws = makeWorkspace();
    const thought = "The server wants Authorization: Bearer x on every call.";
    fake.api.enqueue(
      {
        content: [
          { type: "thinking", thinking: thought },
          { type: "tool_use", id: "toolu_h", name: "bash", input: { command: "echo hi" } },
        ],
      },
      textReply("Done."),
    );
    const first = await runCli(["run", "-w", ws.path, "--thinking", "adaptive", "call it"], { env: env() });
    expect(first.code).toBe(0);
    fake.api.enqueue(textReply("Still done."));
    const more = await runCli(["run", "--continue", "--thinking", "adaptive", "anything left?"], {
      env: env(),
      cwd: ws.path,
    });
    expect(more.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(more.code).toBe(0);
    expect(fake.api.requests[2]?.status).toBe(200);
    expect(requestText(fake.api, 2)).toContain(JSON.stringify(thought));
  });

  it("refuses in one line to send a turn back without the thinking it withheld, and goes on with --thinking off", async () => {
    using ws = makeWorkspace();
    fake.api.enqueue({
      content: [
        { type: "thinking", thinking: `That printed ${printedKey}; leave it alone.` },
        { type: "tool_use", id: "toolu_k", name: "bash", input: { command: "echo hi" } },
      ],
    });
    const first = await runCli(["run", "-w", ws.path, "--thinking", "adaptive", "--max-turns", "1", "look"], {
      env: env(),
    });
    expect(first.stderr).not.toMatch(/at .*\.js:\d+/);
    const transcript = onlyTranscript();
    const runId = transcript.slice(runsDir().length + 1, -".jsonl".length);
    expect(readFileSync(transcript, "utf8")).not.toContain(printedKey);

    const refused = await runCli(["run", "--continue", "--thinking", "adaptive", "go on"], {
      env: env(),
      cwd: ws.path,
    });
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(
      new RegExp(
        `^harness: --continue: run ${runId} stopped in the middle of a turn whose thinking cannot be sent back \\(a thinking block at transcript line \\d+ held an Anthropic API key and was not recorded\\), and the API refuses a turn's tool results without its thinking while thinking is on: give --thinking off\n$`,
      ),
    );
    expect(fake.api.requests).toHaveLength(1);

    fake.api.enqueue(textReply("Went on."));
    const off = await runCli(["run", "--continue", "--thinking", "off", "go on"], {
      env: env(),
      cwd: ws.path,
    });
    expect(off.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(off.code).toBe(0);
    expect(off.stderr).toMatch(
      new RegExp(
        `^harness: left out 1 thinking block\\(s\\) of run ${runId}: a thinking block at transcript line \\d+ held an Anthropic API key and was not recorded, and the API takes thinking back only after the conversation it followed, unchanged$`,
        "m",
      ),
    );
    expect(fake.api.requests[1]?.status).toBe(200);
    expect(fake.api.requests[1]?.body.thinking).toEqual({ type: "disabled" });
  });
});

describe.skipIf(skipDocker)("harness run --continue: saved outputs and the prompt", () => {
  const fake = useFakeApi();
  const env = () => ({ ...fake.env, XDG_STATE_HOME: stateHome });

  it("keeps earlier saved outputs readable and gives new ones fresh ids", async () => {
    using ws = makeWorkspace();
    fake.api.enqueue(toolUseReply("bash", { command: "seq 1 200000" }), textReply("Long."));
    expect((await runCli(["run", "--workspace", ws.path, "count"], { env: env() })).code).toBe(0);
    expect(JSON.stringify(fake.api.requests[1]?.body.messages.at(-1))).toMatch(/saved as out-1/);

    fake.api.enqueue(
      toolUseReply("read_output", { id: "out-1", grep: "^19999[0-9]$" }),
      toolUseReply("bash", { command: "seq 1 300000" }),
      textReply("Both read."),
    );
    const run = await runCli(["run", "--continue", "--workspace", ws.path, "look again"], { env: env() });
    expect(run.code).toBe(0);
    const read = JSON.stringify(fake.api.requests[3]?.body.messages.at(-1));
    expect(read).toContain("out-1 stdout: 10 matching line(s) of 200000.");
    expect(JSON.stringify(fake.api.requests[4]?.body.messages.at(-1))).toMatch(/saved as out-2/);
    const outputs = readdirSync(runsDir()).filter((name) => name.endsWith(".outputs"));
    expect(outputs).toHaveLength(1);
    expect(readdirSync(join(runsDir(), outputs[0] ?? "")).sort()).toEqual(["out-1.stdout", "out-2.stdout"]);
  });

  it("continues into the interactive prompt with the run's history", async () => {
    using ws = makeWorkspace();
    fake.api.enqueue(textReply("The answer is 42."));
    expect((await runCli(["run", "--workspace", ws.path, "what is the answer"], { env: env() })).code).toBe(
      0,
    );
    fake.api.enqueue(textReply("You asked what the answer is."));
    const run = await runCli(["run", "--continue", "--workspace", ws.path], {
      env: env(),
      input: "what did I ask?\nexit\n",
    });
    expect(run.code).toBe(0);
    expect(fake.api.requests[1]?.body.messages.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(requestText(fake.api, 1)).toContain("The answer is 42.");
    expect(run.stdout).toContain("You asked what the answer is.");
  });
});

describe("harness run --continue without a run to continue", () => {
  const env = () => ({
    ANTHROPIC_API_KEY: E2E_KEY,
    MODEL_ID: E2E_MODEL,
    // Never reached: the run ends before any model call or Docker.
    ANTHROPIC_BASE_URL: "http://127.0.0.1:9",
    XDG_STATE_HOME: stateHome,
  });

  it("exits 2 with one line saying which workspace it looked for", async () => {
    using ws = makeWorkspace();
    const run = await runCli(["run", "--continue", "go on"], { env: env(), cwd: ws.path });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(
      /^harness: --continue: no run of workspace \/\S+ in \S+ \(harness runs lists runs\)\n$/,
    );
    expect(run.stderr).toContain(ws.path.split("/").pop());
  });

  it("exits 2 for an unknown id, for both flags, and with --transcript", async () => {
    const unknown = await runCli(["run", "--resume", "1999-nope", "go on"], { env: env() });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/^harness: --resume: no run '1999-nope' .*\n$/);
    const both = await runCli(["run", "--continue", "--resume", "x", "go on"], { env: env() });
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/cannot be used together/);
    const transcript = await runCli(["run", "--continue", "--transcript", "t.jsonl", "go on"], {
      env: env(),
    });
    expect(transcript.code).toBe(2);
    expect(transcript.stderr).toMatch(/^harness: --transcript cannot be used with --continue/);
  });
});
