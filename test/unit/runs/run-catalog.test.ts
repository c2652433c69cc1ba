import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../src/errors.js";
import { findRun, listRuns } from "../../../src/runs/run-catalog.js";
import { liveDirOf, markRunLive, runLiveness } from "../../../src/runs/run-liveness.js";
import { INDEX_FILE } from "../../../src/runs/summary-index.js";
import { DEAD_PID, makeStateHome, runIdAt, usageOf, writeRun } from "../../support/run-fixtures.js";

const NOW = Date.parse("2026-11-30T12:00:00.000Z");
const HOUR = 3_600_000;
const dead = () => false;

describe("listRuns", () => {
  it("lists runs newest first with workspace, task, ending, turns, cost and size including outputs", () => {
    using state = makeStateHome();
    const older = runIdAt(NOW - 5 * HOUR);
    const newer = runIdAt(NOW - 1 * HOUR);
    writeRun(state.runs, older, {
      startMs: NOW - 5 * HOUR,
      mtimeMs: NOW - 5 * HOUR,
      run: { task: "old task", end: { status: "step_limit", turns: 50, usage: usageOf(1_000_000, 0) } },
    });
    const files = writeRun(state.runs, newer, {
      startMs: NOW - HOUR,
      mtimeMs: NOW - HOUR,
      outputsBytes: 10_000,
      run: {
        task: "new task",
        workspace: "/home/u/app",
        model: "claude-sonnet-4-5",
        commands: [{ command: "npm test", exitCode: 0 }],
        end: { status: "submitted", turns: 2, usage: usageOf(1_000_000, 100_000) },
      },
    });
    const runs = listRuns(state.runs, { now: NOW, isAlive: dead, env: {} });
    expect(runs.map((run) => run.id)).toEqual([newer, older]);
    expect(runs[0]).toMatchObject({
      id: newer,
      startedMs: NOW - HOUR,
      workspace: "/home/u/app",
      task: "new task",
      status: "submitted",
      active: false,
      turns: 2,
      model: "claude-sonnet-4-5",
      // Sonnet 4.x: $3 in, $15 out per million tokens.
      costUsd: 4.5,
      transcriptPath: files.transcript,
      outputsPath: files.outputs,
      outputsBytes: 10_000,
      partial: false,
    });
    expect(runs[0]?.transcriptBytes).toBeGreaterThan(500);
    expect(runs[1]).toMatchObject({ status: "step_limit", turns: 50, task: "old task" });
  });

  it("shows a corrupt, a cut and an empty transcript, and outputs without a transcript, as such", () => {
    using state = makeStateHome();
    const at = (hours: number) => ({ startMs: NOW - hours * HOUR, mtimeMs: NOW - hours * HOUR });
    writeRun(state.runs, runIdAt(NOW - HOUR), { ...at(1), text: "\u0000\u0001garbage" });
    writeRun(state.runs, runIdAt(NOW - 2 * HOUR), {
      ...at(2),
      text: '{"type":"run_start","time":"2026-11-30T10:00:00.000Z","task":"cut","system":"s"}\n{"type":"tool_',
    });
    writeRun(state.runs, runIdAt(NOW - 3 * HOUR), { ...at(3), text: "" });
    mkdirSync(join(state.runs, `${runIdAt(NOW - 4 * HOUR)}.outputs`));
    writeFileSync(join(state.runs, `${runIdAt(NOW - 4 * HOUR)}.outputs`, "out-1.stdout"), "x".repeat(100));
    const runs = listRuns(state.runs, { now: NOW, isAlive: dead });
    expect(runs.map((run) => [run.status, run.problem])).toEqual([
      ["corrupt", expect.stringContaining("not a harness transcript")],
      ["unfinished", expect.stringContaining("ends mid-record")],
      ["empty", undefined],
      ["orphaned", undefined],
    ]);
    expect(runs[1]?.task).toBe("cut");
    expect(runs[3]?.outputsBytes).toBe(100);
  });

  it("a run without run_end is running while its process lives or it was just written", () => {
    using state = makeStateHome();
    const alivePid = 4242;
    const started = (hours: number) => ({ startMs: NOW - hours * HOUR });
    writeRun(state.runs, runIdAt(NOW - 2 * HOUR, alivePid), {
      ...started(2),
      mtimeMs: NOW - HOUR,
      run: { task: "a" },
    });
    writeRun(state.runs, runIdAt(NOW - 3 * HOUR), {
      ...started(3),
      mtimeMs: NOW - 10_000,
      run: { task: "b" },
    });
    writeRun(state.runs, runIdAt(NOW - 4 * HOUR), { ...started(4), mtimeMs: NOW - HOUR, run: { task: "c" } });
    const runs = listRuns(state.runs, { now: NOW, isAlive: (pid) => pid === alivePid });
    expect(runs.map((run) => [run.task, run.status, run.active])).toEqual([
      ["a", "running", true],
      ["b", "running", true],
      ["c", "unfinished", false],
    ]);
  });

  it("a run without run_end whose live record names a process that is gone is interrupted, even just written", () => {
    using state = makeStateHome();
    const started = (hours: number) => ({ startMs: NOW - hours * HOUR });
    const killed = runIdAt(NOW - 2 * HOUR, 4242);
    const alive = runIdAt(NOW - 3 * HOUR, 4343);
    const ended = runIdAt(NOW - 4 * HOUR, 4444);
    // The killed one was written a second ago and its id's pid is alive (reused): the record decides.
    writeRun(state.runs, killed, { ...started(2), mtimeMs: NOW - 1_000, run: { task: "killed" } });
    writeRun(state.runs, alive, { ...started(3), mtimeMs: NOW - HOUR, run: { task: "alive" } });
    writeRun(state.runs, ended, {
      ...started(4),
      mtimeMs: NOW - HOUR,
      run: { task: "ended", end: { status: "submitted", turns: 1, usage: usageOf(0, 0) } },
    });
    const live = new Map([
      [killed, "gone"],
      [alive, "alive"],
      [ended, "gone"],
    ] as const);
    const runs = listRuns(state.runs, { now: NOW, isAlive: () => true, liveness: (id) => live.get(id) });
    expect(runs.map((run) => [run.task, run.status, run.active])).toEqual([
      ["killed", "interrupted", false],
      ["alive", "running", true],
      ["ended", "submitted", false],
    ]);
  });

  it("reads the live record a run keeps while it runs, and none once it is disposed", () => {
    using state = makeStateHome();
    const id = runIdAt(NOW, process.pid);
    {
      using _live = markRunLive(state.runs, id);
      expect(runLiveness(state.runs, id)).toBe("alive");
      writeFileSync(
        join(liveDirOf(state.runs), `${id}.json`),
        JSON.stringify({ pid: process.pid, started: "1" }),
      );
      expect(runLiveness(state.runs, id)).toBe("gone");
    }
    expect(runLiveness(state.runs, id)).toBeUndefined();
  });

  it("has no runs when the directory does not exist, and ignores links and other files", () => {
    using state = makeStateHome();
    expect(listRuns(join(state.home, "nowhere"))).toEqual([]);
    writeFileSync(join(state.home, "elsewhere.jsonl"), "{}\n");
    symlinkSync(join(state.home, "elsewhere.jsonl"), join(state.runs, `${runIdAt(NOW)}.jsonl`));
    writeFileSync(join(state.runs, "notes.txt"), "mine");
    expect(listRuns(state.runs, { now: NOW })).toEqual([]);
  });

  it("gives no cost for a model without a known price, and one when HARNESS_PRICE_* sets it", () => {
    using state = makeStateHome();
    const end = { status: "submitted", turns: 1, usage: usageOf(1_000_000, 0) };
    writeRun(state.runs, runIdAt(NOW - HOUR), {
      mtimeMs: NOW - HOUR,
      run: { model: "some-new-model", commands: [{ command: "true", exitCode: 0 }], end },
    });
    expect(listRuns(state.runs, { now: NOW, env: {} })[0]?.costUsd).toBeNull();
    const priced = { HARNESS_PRICE_INPUT: "2", HARNESS_PRICE_OUTPUT: "8" };
    expect(listRuns(state.runs, { now: NOW, env: priced })[0]?.costUsd).toBe(2);
  });
});

describe("listRuns' index of summaries", () => {
  it("reuses what a transcript said while its size and mtime are unchanged, and reads it again after", () => {
    using state = makeStateHome();
    const id = runIdAt(NOW - HOUR);
    const end = { status: "submitted", turns: 4, usage: usageOf(10, 10) };
    const files = writeRun(state.runs, id, {
      startMs: NOW - HOUR,
      mtimeMs: NOW - HOUR,
      run: { task: "indexed", end },
    });
    expect(listRuns(state.runs, { now: NOW })[0]).toMatchObject({ task: "indexed", status: "submitted" });
    expect(existsSync(join(state.runs, INDEX_FILE))).toBe(true);
    // Same size, same mtime, other bytes: only the index can still say "indexed".
    const size = readFileSync(files.transcript).length;
    writeFileSync(files.transcript, "x".repeat(size));
    utimesSync(files.transcript, (NOW - HOUR) / 1000, (NOW - HOUR) / 1000);
    expect(listRuns(state.runs, { now: NOW })[0]).toMatchObject({ task: "indexed", status: "submitted" });
    expect(listRuns(state.runs, { now: NOW, index: false })[0]).toMatchObject({ status: "corrupt" });
    utimesSync(files.transcript, (NOW - HOUR + 1000) / 1000, (NOW - HOUR + 1000) / 1000);
    expect(listRuns(state.runs, { now: NOW })[0]).toMatchObject({ status: "corrupt" });
  });

  it("lists correctly with a damaged index, and drops the entries of removed runs", () => {
    using state = makeStateHome();
    const ids = [runIdAt(NOW - 2 * HOUR), runIdAt(NOW - HOUR)];
    for (const id of ids) writeRun(state.runs, id, { mtimeMs: NOW - HOUR, run: { task: id } });
    writeFileSync(join(state.runs, INDEX_FILE), '{"version":1,"entries":{"x":');
    expect(listRuns(state.runs, { now: NOW }).map((run) => run.task)).toEqual([...ids].reverse());
    rmSync(join(state.runs, `${ids[0]}.jsonl`));
    listRuns(state.runs, { now: NOW });
    const index = JSON.parse(readFileSync(join(state.runs, INDEX_FILE), "utf8")) as { entries: object };
    expect(Object.keys(index.entries)).toEqual([ids[1]]);
  });
});

describe("findRun", () => {
  const runs = [
    { id: `2026-11-30T10-00-00-000Z-${DEAD_PID}` },
    { id: `2026-11-30T10-05-00-000Z-${DEAD_PID}` },
    { id: `2026-11-29T09-00-00-000Z-${DEAD_PID}` },
  ];

  it("finds a run by its id or a unique prefix", () => {
    expect(findRun(runs, runs[1]?.id ?? "")).toBe(runs[1]);
    expect(findRun(runs, "2026-11-29")).toBe(runs[2]);
    expect(findRun(runs, "2026-11-30T10-05")).toBe(runs[1]);
  });

  it("finds the newest run as last, the ones before it as last~N, and a run by a unique suffix", () => {
    const more = [...runs, { id: "2026-11-30T10-06-00-000Z-4242" }];
    expect(findRun(more, "last")).toBe(more[3]);
    expect(findRun(more, "last~1")).toBe(more[1]);
    expect(findRun(more, "last~3")).toBe(more[2]);
    expect(findRun(more, "4242")).toBe(more[3]);
    expect(findRun(more, `10-05-00-000Z-${DEAD_PID}`)).toBe(more[1]);
    expect(() => findRun(more, "last~4")).toThrow(
      /no run 'last~4': there are 4 runs \(last~3 is the oldest\)/,
    );
    expect(() => findRun([], "last")).toThrow(/no run 'last': there are no runs yet/);
    expect(() => findRun(more, String(DEAD_PID))).toThrow(/matches 3 runs/);
  });

  it("refuses an ambiguous prefix, naming the candidates, and an unknown id", () => {
    expect(() => findRun(runs, "2026-11-30")).toThrow(ConfigError);
    expect(() => findRun(runs, "2026-11-30")).toThrow(
      /matches 2 runs: .*10-05.*, .*10-00.*; give more of the id/,
    );
    expect(() => findRun(runs, "2027")).toThrow(/no run '2027'/);
    expect(() => findRun(runs, " ")).toThrow(/give a run id/);
  });
});
