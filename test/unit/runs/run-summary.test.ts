import { closeSync, openSync, statSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { summarizeTranscript } from "../../../src/runs/run-summary.js";
import { fakeRecords, makeStateHome, toJsonl, usageOf } from "../../support/run-fixtures.js";

const START = Date.parse("2026-11-01T10:00:00.000Z");
const ended = { status: "submitted", turns: 3, usage: usageOf(3000, 300), finalText: "All tests pass." };

describe("summarizeTranscript", () => {
  it("reads a small transcript's task, workspace, model, ending, turns and tokens", () => {
    using state = makeStateHome();
    const path = join(state.runs, "a.jsonl");
    const run = { task: "fix it", workspace: "/home/u/app", model: "claude-haiku-4-5", end: ended };
    writeFileSync(path, toJsonl(fakeRecords({ ...run, commands: [{ command: "ls", exitCode: 0 }] }, START)));
    expect(summarizeTranscript(path)).toEqual({
      state: "ok",
      startedMs: START,
      task: "fix it",
      workspace: "/home/u/app",
      model: "claude-haiku-4-5",
      status: "submitted",
      finalText: "All tests pass.",
      turns: 3,
      usage: usageOf(3000, 300),
      runEnds: 1,
      partial: false,
      cutMidRecord: false,
    });
  });

  it("reads only the head and tail of a big transcript: a run_end in the middle is not seen", () => {
    using state = makeStateHome();
    const path = join(state.runs, "big.jsonl");
    const records = fakeRecords({ task: "big one", end: ended }, START);
    const middle = {
      type: "run_end",
      time: "x",
      status: "error",
      turns: 1000,
      usage: usageOf(1, 1),
      finalText: "",
    };
    const filler = { type: "notice", time: "x", text: "y".repeat(200_000) };
    const [first, ...rest] = records;
    writeFileSync(path, toJsonl([first, filler, middle, filler, ...rest]));
    const summary = summarizeTranscript(path, { edgeBytes: 4096 });
    expect(summary).toMatchObject({
      state: "ok",
      task: "big one",
      status: "submitted",
      turns: 3,
      partial: true,
    });
    // Read whole, the middle run_end would count.
    expect(summarizeTranscript(path, { edgeBytes: 1024 ** 2 })).toMatchObject({
      turns: 1003,
      partial: false,
    });
  });

  it("summarises a 64 MiB transcript from its ends", () => {
    using state = makeStateHome();
    const path = join(state.runs, "huge.jsonl");
    const records = fakeRecords({ task: "huge", end: ended }, START);
    const fd = openSync(path, "w");
    writeSync(fd, toJsonl(records.slice(0, 2)), 0);
    // A sparse hole of 64 MiB of NULs: a whole read would see one unparseable 64 MiB line.
    const hole = 64 * 1024 ** 2;
    writeSync(fd, `\n${toJsonl(records.slice(2))}`, hole);
    closeSync(fd);
    expect(statSync(path).size).toBeGreaterThan(hole);
    // Read from its ends only: a whole read would meet the 64 MiB line and find no run_end.
    const summary = summarizeTranscript(path);
    expect(summary).toMatchObject({
      state: "ok",
      task: "huge",
      status: "submitted",
      turns: 3,
      partial: true,
    });
  });

  it("grows the head until the run_start line is whole, and the tail until the run_end is", () => {
    using state = makeStateHome();
    const path = join(state.runs, "long-lines.jsonl");
    const finalText = "z".repeat(50_000);
    const records = fakeRecords({ task: "t".repeat(50_000), end: { ...ended, finalText } }, START);
    const filler = { type: "notice", time: "x", text: "y".repeat(100_000) };
    const [first, ...rest] = records;
    writeFileSync(path, toJsonl([first, filler, ...rest]));
    const summary = summarizeTranscript(path, { edgeBytes: 1024 });
    expect(summary.task).toHaveLength(50_000);
    expect(summary.finalText).toBe(finalText);
    expect(summary.partial).toBe(true);
  });

  it("describes what is not a transcript instead of throwing", () => {
    using state = makeStateHome();
    const cases: Array<[string, string, string]> = [
      ["empty", "", "empty"],
      ["garbage", "not json at all\n", "corrupt"],
      ["other", `${JSON.stringify({ type: "user", time: "x", text: "hi" })}\n`, "corrupt"],
      ["cut-first", '{"type":"run_start","task":"cut', "corrupt"],
    ];
    for (const [name, text, expected] of cases) {
      const path = join(state.runs, `${name}.jsonl`);
      writeFileSync(path, text);
      expect(summarizeTranscript(path).state, name).toBe(expected);
    }
    expect(summarizeTranscript(join(state.runs, "missing.jsonl"))).toMatchObject({
      state: "unreadable",
      problem: expect.stringContaining("ENOENT"),
    });
  });

  it("a transcript cut mid-record has not ended; its tokens so far come from the last usage record", () => {
    using state = makeStateHome();
    const path = join(state.runs, "cut.jsonl");
    const records = fakeRecords(
      {
        commands: [
          { command: "make", exitCode: 0 },
          { command: "make test", exitCode: 2 },
        ],
      },
      START,
    );
    writeFileSync(path, `${toJsonl(records)}{"type":"assistant","time":"2026-11-01T10:00`);
    const summary = summarizeTranscript(path);
    expect(summary).toMatchObject({ state: "ok", cutMidRecord: true, turns: 2, usage: usageOf(1000, 100) });
    expect(summary.status).toBeUndefined();
  });

  it("sums the prompts of an interactive session; one started after the last run_end is not ended", () => {
    using state = makeStateHome();
    const path = join(state.runs, "session.jsonl");
    const one = fakeRecords({ task: "first", end: ended }, START);
    const two = fakeRecords(
      { task: "second", end: { ...ended, status: "step_limit", turns: 5 } },
      START + 60_000,
    );
    writeFileSync(path, toJsonl([...one, ...two]));
    expect(summarizeTranscript(path)).toMatchObject({
      task: "first",
      status: "step_limit",
      turns: 8,
      runEnds: 2,
    });
    const three = fakeRecords({ task: "third" }, START + 120_000);
    writeFileSync(path, toJsonl([...one, ...two, ...three]));
    const open = summarizeTranscript(path);
    expect(open.status).toBeUndefined();
    expect(open.turns).toBe(8);
  });
});
