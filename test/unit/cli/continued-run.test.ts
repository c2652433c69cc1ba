import {
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type ContinueFlags, loadContinuedRun } from "../../../src/cli/runs/continued-run.js";
import { ConfigError } from "../../../src/errors.js";
import { pruneRuns } from "../../../src/runs/retention.js";
import { keepRunActive } from "../../../src/runs/run-heartbeat.js";
import { MCP_SESSION_TASK } from "../../../src/transcript/transcript-records.js";
import { fakeRecords, makeStateHome, runIdAt, toJsonl, writeRun } from "../../support/run-fixtures.js";

const NOW = Date.now();
const HOUR = 3_600_000;

let scratch: string;
let project: string;
let other: string;
beforeEach(() => {
  scratch = realpathSync(mkdtempSync(join(tmpdir(), "harness-continue-")));
  project = join(scratch, "project");
  other = join(scratch, "other");
  mkdirSync(project);
  mkdirSync(other);
});
afterEach(() => {
  rmSync(scratch, { recursive: true, force: true });
});

const notAlive = (_pid: number): boolean => false;

function load(flags: ContinueFlags, env: NodeJS.ProcessEnv, isAlive: (pid: number) => boolean = notAlive) {
  return loadContinuedRun(flags, { env, isAlive, ownPid: 1 });
}

/** Runs of `project` (3 h and 1 h old) and of `other` (newer than both). */
function threeRuns(runs: string): string[] {
  return [
    { age: 3 * HOUR, workspace: project },
    { age: HOUR, workspace: project },
    { age: HOUR / 2, workspace: other },
  ].map(({ age, workspace }, i) => {
    const id = runIdAt(NOW - age);
    writeRun(runs, id, {
      startMs: NOW - age,
      mtimeMs: NOW - age,
      run: {
        task: `task ${i}`,
        workspace,
        commands: [{ command: `make ${i}`, exitCode: 0 }],
        end: { status: "submitted", turns: 2, usage: fakeUsage() },
      },
    });
    return id;
  });
}

function fakeUsage() {
  return { inputTokens: 1, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
}

describe("loadContinuedRun", () => {
  it("is undefined without --continue or --resume", async () => {
    using state = makeStateHome();
    expect(await load({}, state.env)).toBeUndefined();
  });

  it("--continue takes the last run of this workspace, with its conversation", async () => {
    using state = makeStateHome();
    const ids = threeRuns(state.runs);
    const run = await load({ continue: true, workspace: project }, state.env);
    expect(run).toMatchObject({ id: ids[1], workspace: project, incompleteCalls: 0 });
    expect(run?.transcriptPath).toBe(join(state.runs, `${ids[1]}.jsonl`));
    expect(run?.messages.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect(JSON.stringify(run?.messages)).toContain("make 1");
  });

  it("--continue finds the workspace through HARNESS_WORKSPACE and through a symlink", async () => {
    using state = makeStateHome();
    const ids = threeRuns(state.runs);
    const link = join(scratch, "link");
    symlinkSync(project, link);
    expect((await load({ continue: true }, { ...state.env, HARNESS_WORKSPACE: link }))?.id).toBe(ids[1]);
  });

  it("--continue takes the run active last, not the one started last", async () => {
    using state = makeStateHome();
    const ids = threeRuns(state.runs);
    // The older run of the project was continued a moment ago.
    keepRunActive(join(state.runs, `${ids[0]}.jsonl`))[Symbol.dispose]();
    expect((await load({ continue: true, workspace: project }, state.env))?.id).toBe(ids[0]);
  });

  it("--continue in a workspace with no runs says what it looked for", async () => {
    using state = makeStateHome();
    threeRuns(state.runs);
    const empty = join(scratch, "empty");
    mkdirSync(empty);
    await expect(load({ continue: true, workspace: empty }, state.env)).rejects.toThrow(
      new ConfigError(`--continue: no run of workspace ${empty} in ${state.runs} (harness runs lists runs)`),
    );
  });

  it("--resume takes a unique prefix, an id or a transcript path", async () => {
    using state = makeStateHome();
    const ids = threeRuns(state.runs);
    const id = ids[0] ?? "";
    expect((await load({ resume: id.slice(0, 16) }, state.env))?.id).toBe(id);
    expect((await load({ resume: id }, state.env))?.id).toBe(id);
    const path = join(state.runs, `${id}.jsonl`);
    expect(await load({ resume: path }, state.env)).toMatchObject({ id, transcriptPath: path });
  });

  it("--resume of an unknown or ambiguous id is one line naming it", async () => {
    using state = makeStateHome();
    threeRuns(state.runs);
    await expect(load({ resume: "1999" }, state.env)).rejects.toThrow(
      `--resume: no run '1999' (harness runs lists them; an id, a unique prefix or suffix of one, last or last~N); runs directory: ${state.runs}`,
    );
    await expect(load({ resume: "20" }, state.env)).rejects.toThrow(/^--resume: '20' matches 3 runs/);
  });

  it("refuses both flags, and --transcript with either", async () => {
    using state = makeStateHome();
    await expect(load({ continue: true, resume: "x" }, state.env)).rejects.toThrow(
      "--continue and --resume cannot be used together",
    );
    await expect(load({ continue: true, transcript: "t.jsonl" }, state.env)).rejects.toThrow(
      /^--transcript cannot be used with --continue: the continued run is appended to its own transcript$/,
    );
    await expect(load({ resume: "x", transcript: "t.jsonl" }, state.env)).rejects.toThrow(
      /--transcript cannot be used with --resume/,
    );
  });

  it("says which workspace it uses, and asks for --workspace when harness cannot vouch for the record", async () => {
    using state = makeStateHome();
    const ids = threeRuns(state.runs);
    const id = ids[0] ?? "";
    expect((await load({ resume: id }, state.env))?.workspace).toBe(project);
    // A `--transcript` file elsewhere (here: in another workspace) may have been rewritten by a task.
    const copied = join(other, "t.jsonl");
    writeFileSync(copied, readFileSync(join(state.runs, `${id}.jsonl`)));
    await expect(load({ resume: copied }, state.env)).rejects.toThrow(
      `--resume ${copied}: the transcript is not in harness's runs directory (${state.runs}), so what it records may not be what harness wrote: it records workspace ${project}; check that and give --workspace ${project} to continue there`,
    );
    expect((await load({ resume: copied, workspace: project }, state.env))?.workspace).toBe(project);
    // Inside the very workspace it records: the sandbox could have written it.
    const inside = join(project, "t.jsonl");
    writeFileSync(inside, readFileSync(join(state.runs, `${id}.jsonl`)));
    await expect(load({ resume: inside }, state.env)).rejects.toThrow(
      /the transcript lies inside the workspace it records, where the sandbox could rewrite it/,
    );
  });

  it("refuses a transcript that is a symlink or has another name, before reading it", async () => {
    using state = makeStateHome();
    const id = threeRuns(state.runs)[0] ?? "";
    const real = join(state.runs, `${id}.jsonl`);
    const link = join(other, "link.jsonl");
    symlinkSync(real, link);
    await expect(load({ resume: link, workspace: project }, state.env)).rejects.toThrow(
      `--resume: transcript ${link} is a symlink: give the transcript itself`,
    );
    linkSync(real, join(other, "hard.jsonl"));
    await expect(load({ resume: id }, state.env)).rejects.toThrow(/has 2 hard links/);
  });

  it("refuses a --workspace that is not the run's", async () => {
    using state = makeStateHome();
    const ids = threeRuns(state.runs);
    await expect(load({ resume: ids[0] ?? "", workspace: other }, state.env)).rejects.toThrow(
      `--workspace ${other} is not the workspace of run ${ids[0]} (${project}); leave --workspace out to continue it there`,
    );
    expect((await load({ resume: ids[0] ?? "", workspace: `${project}/.` }, state.env))?.id).toBe(ids[0]);
  });

  it("refuses a run whose transcript another live harness process still has open", async () => {
    using state = makeStateHome();
    const id = runIdAt(NOW - HOUR, 5555);
    const records = fakeRecords({ workspace: project }, NOW - HOUR);
    writeRun(state.runs, id, { text: toJsonl(records) });
    const alive = (pid: number) => pid === 5555;
    await expect(load({ resume: id }, state.env, alive)).rejects.toThrow(
      `run ${id} is still open in harness process 5555`,
    );
    // Continued since by process 6666, which is gone: the id's pid no longer counts.
    writeRun(state.runs, id, { text: toJsonl([...records, { ...records[0], pid: 6666 }]) });
    expect((await load({ resume: id }, state.env, alive))?.id).toBe(id);
  });

  it("knows the highest saved-output id the conversation names", async () => {
    using state = makeStateHome();
    const id = runIdAt(NOW);
    const records = fakeRecords({ workspace: project, commands: [{ command: "seq", exitCode: 0 }] }, NOW);
    const text = toJsonl(records).replace('"content":"exit 0"', '"content":"cut; saved as out-7 (stdout)"');
    writeRun(state.runs, id, { text });
    expect((await load({ resume: id }, state.env))?.highestOutputId).toBe(7);
  });

  it("refuses an MCP session in one line naming why, for --continue and --resume alike", async () => {
    using state = makeStateHome();
    const id = runIdAt(NOW);
    const [first] = fakeRecords({ workspace: project }, NOW);
    const start = { ...first, task: MCP_SESSION_TASK, mcpSession: true };
    const call = {
      type: "tool_call",
      time: first?.time,
      id: "mcp-1",
      name: "bash",
      input: { command: "ls" },
    };
    const result = { ...call, type: "tool_result", isError: false, content: "a.txt" };
    writeRun(state.runs, id, { text: toJsonl([start, call, result]) });
    const why = `run ${id} is an MCP session: its tool calls came from an MCP client, whose own model holds the conversation, so harness has none to continue`;
    await expect(load({ continue: true, workspace: project }, state.env)).rejects.toThrow(
      new ConfigError(
        `--continue: ${why}; start a new run (without --continue) on the workspace as the session left it, or resume an agent run (harness runs lists them)`,
      ),
    );
    await expect(load({ resume: id }, state.env)).rejects.toThrow(`--resume: ${why}`);
  });
});

describe("keepRunActive", () => {
  it("touches the transcript now and keeps it touched until disposed", async () => {
    using state = makeStateHome();
    const id = runIdAt(NOW - 10 * HOUR);
    const { transcript } = writeRun(state.runs, id, { mtimeMs: NOW - 10 * HOUR });
    const heartbeat = keepRunActive(transcript, 20);
    // Touched at once: no longer ten hours old.
    expect(statSync(transcript).mtimeMs).toBeGreaterThan(NOW - 10 * HOUR);
    utimesSync(transcript, 1, 1);
    await new Promise((resolve) => setTimeout(resolve, 80));
    // Touched again by the heartbeat.
    expect(statSync(transcript).mtimeMs).toBeGreaterThan(1000);
    heartbeat[Symbol.dispose]();
    utimesSync(transcript, 1, 1);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(statSync(transcript).mtimeMs).toBe(1000);
  });

  it("keeps another process's pruning off a run being continued, old as it is", async () => {
    using state = makeStateHome();
    const old = runIdAt(NOW - 40 * 24 * HOUR);
    const other = runIdAt(NOW - 39 * 24 * HOUR);
    for (const id of [old, other])
      writeRun(state.runs, id, { mtimeMs: NOW - 39 * 24 * HOUR, outputsBytes: 10 });
    using _heartbeat = keepRunActive(join(state.runs, `${old}.jsonl`));
    const report = pruneRuns(state.runs, { maxBytes: 0, maxAgeMs: HOUR }, { isAlive: notAlive });
    expect(report.removed.map((action) => action.id)).toEqual([other]);
    expect(existsSync(join(state.runs, `${old}.jsonl`))).toBe(true);
    expect(existsSync(join(state.runs, `${old}.outputs`))).toBe(true);
  });
});
