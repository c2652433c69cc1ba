import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  type RunsIo,
  runsListCommand,
  runsPruneCommand,
  runsRmCommand,
  runsShowCommand,
} from "../../../src/cli/runs/runs-command.js";
import { ConfigError } from "../../../src/errors.js";
import { writeKeptCopy } from "../../../src/sandbox/copy/kept/kept-copy-record.js";
import { makeStateHome, runIdAt, usageOf, writeRun } from "../../support/run-fixtures.js";

const NOW = Date.now();
const DAY = 86_400_000;

function io(env: NodeJS.ProcessEnv, columns?: number): RunsIo & { out: () => string; err: () => string } {
  let out = "";
  let err = "";
  return {
    stdout: (text) => {
      out += text;
    },
    stderr: (text) => {
      err += text;
    },
    env,
    now: () => NOW,
    ...(columns === undefined ? {} : { columns }),
    out: () => out,
    err: () => err,
  };
}

/** Three finished runs: 3 days, 2 days and 1 hour old. */
function threeRuns(runsDir: string): string[] {
  return [3 * DAY, 2 * DAY, 3_600_000].map((age, i) => {
    const id = runIdAt(NOW - age);
    writeRun(runsDir, id, {
      startMs: NOW - age,
      mtimeMs: NOW - age,
      outputsBytes: i === 0 ? 2048 : 0,
      run: {
        task: `task number ${i}`,
        workspace: `/srv/app${i}`,
        commands: [{ command: `make step${i}`, exitCode: i }],
        end: { status: i === 1 ? "step_limit" : "submitted", turns: i + 1, usage: usageOf(10_000, 1000) },
      },
    });
    return id;
  });
}

describe("harness runs", () => {
  it("prints a table newest first, with a line saying where runs are kept and the limits", async () => {
    using state = makeStateHome();
    const ids = threeRuns(state.runs);
    const term = io(state.env);
    expect(await runsListCommand({}, term)).toBe(0);
    const lines = term.out().trimEnd().split("\n");
    expect(lines[0]).toMatch(/^RUN +STARTED +STATUS +TURNS +COST +SIZE +WORKSPACE +TASK$/);
    expect(lines[1]).toMatch(
      new RegExp(`^${ids[2]} +1h ago +submitted +3 +\\$0\\.045 +[\\d.]+ KiB +/srv/app2 +task number 2$`),
    );
    expect(lines[2]).toMatch(new RegExp(`^${ids[1]} +2d ago +step_limit +2 `));
    expect(lines[3]).toMatch(new RegExp(`^${ids[0]} +3d ago +submitted +1 `));
    expect(lines[4]).toBe(
      `3 runs, ${lines[4]?.split(" ")[2]} KiB in ${state.runs} (kept under 500 MiB, 30 days)`,
    );
  });

  it("names a run's kept copy-mode copy and what to do with it, not a live session's", async () => {
    using state = makeStateHome();
    const [id] = threeRuns(state.runs).slice(2);
    const record = (copyId: string, pid: number) => ({
      version: 1 as const,
      id: copyId,
      command: "run",
      root: "/srv/app2",
      workdir: "/workspace",
      createdAt: new Date(NOW - 2 * 3_600_000).toISOString(),
      state: "open" as const,
      owner: { pid },
      limitBytes: 1024,
      maxEntries: 10,
      protect: {},
    });
    const scan = { entries: [], skipped: [], totalBytes: 0, notUtf8: [] };
    // Its harness is gone (no process has pid 0x7ffffffe): kept. This process's own: a live session.
    await writeKeptCopy(record(id ?? "", 0x7ffffffe), scan, state.env);
    await writeKeptCopy(record(`${id}.2`, process.pid), scan, state.env);
    const term = io(state.env);
    expect(await runsListCommand({}, term)).toBe(0);
    expect(term.out()).toContain(
      `kept copy ${id} of /srv/app2 (2h ago): its changes were not applied; harness apply ${id} lands them, harness rm ${id} drops them\n`,
    );
    expect(term.out()).not.toContain(`${id}.2`);
    // The same in JSON, for programs: each run with the ids of its kept copies.
    const json = io(state.env);
    await runsListCommand({ outputFormat: "json" }, json);
    const rows = JSON.parse(json.out()) as { id: string; keptCopies: string[] }[];
    expect(rows.map((row) => [row.id, row.keptCopies])).toEqual([
      [id, [id]],
      [expect.any(String), []],
      [expect.any(String), []],
    ]);
  });

  it("gives JSON with --output-format json, and says when there are no runs", async () => {
    using state = makeStateHome();
    const empty = io(state.env);
    await runsListCommand({}, empty);
    expect(empty.out()).toBe(`no runs in ${state.runs}\n`);
    const ids = threeRuns(state.runs);
    const json = io(state.env);
    await runsListCommand({ outputFormat: "json" }, json);
    const runs = JSON.parse(json.out()) as Array<Record<string, unknown>>;
    expect(runs.map((run) => run["id"])).toEqual([...ids].reverse());
    expect(runs[2]).toMatchObject({
      status: "submitted",
      workspace: "/srv/app0",
      task: "task number 0",
      turns: 1,
      costUsd: 0.045,
      outputsBytes: 2048,
      active: false,
    });
    await expect(runsListCommand({ outputFormat: "yaml" }, json)).rejects.toThrow(ConfigError);
  });

  it("cuts the task to the terminal's width", async () => {
    using state = makeStateHome();
    const id = runIdAt(NOW - DAY);
    writeRun(state.runs, id, { startMs: NOW - DAY, mtimeMs: NOW - DAY, run: { task: "word ".repeat(100) } });
    const term = io(state.env, 120);
    await runsListCommand({}, term);
    const row = term.out().split("\n")[1] ?? "";
    expect(row.length).toBeLessThanOrEqual(120);
    expect(row.length).toBeGreaterThan(110);
    expect(row).toMatch(/ word w?o?r?d?…$/);
  });
});

describe("harness runs show", () => {
  it("shows a run found by a unique prefix, and a transcript given by path", async () => {
    using state = makeStateHome();
    const ids = threeRuns(state.runs);
    const term = io(state.env);
    const id = ids[1] ?? "";
    expect(await runsShowCommand(id.slice(0, 13), term)).toBe(0);
    expect(term.out()).toContain(`run        ${id}\ntranscript ${join(state.runs, `${id}.jsonl`)}`);
    expect(term.out()).toContain("[1] $ make step1\n    exit 1 · 42 ms");
    expect(term.out()).toContain("ended: step_limit after 2 turns");
    const byPath = io(state.env);
    await runsShowCommand(join(state.runs, `${ids[0]}.jsonl`), byPath);
    expect(byPath.out()).toContain("task\n    task number 0");
  });

  it("refuses an ambiguous prefix", async () => {
    using state = makeStateHome();
    threeRuns(state.runs);
    await expect(runsShowCommand("20", io(state.env))).rejects.toThrow(/matches 3 runs/);
  });
});

describe("harness runs rm", () => {
  it("removes runs with their saved outputs", async () => {
    using state = makeStateHome();
    const ids = threeRuns(state.runs);
    const term = io(state.env);
    expect(await runsRmCommand([ids[0] ?? "", ids[1] ?? ""], term)).toBe(0);
    expect(term.out()).toMatch(new RegExp(`^removed ${ids[0]} \\(.*\\)\nremoved ${ids[1]} \\(.*\\)\n$`));
    expect(readdirSync(state.runs)).toEqual([`${ids[2]}.jsonl`]);
  });

  it("removes nothing when one id is ambiguous, unknown, or a run still in progress", async () => {
    using state = makeStateHome();
    const ids = threeRuns(state.runs);
    const before = readdirSync(state.runs).sort();
    await expect(runsRmCommand([ids[0] ?? "", "20"], io(state.env))).rejects.toThrow(/matches 3 runs/);
    await expect(runsRmCommand([ids[0] ?? "", "1999"], io(state.env))).rejects.toThrow(/no run '1999'/);
    const running = runIdAt(NOW - DAY, process.pid);
    writeRun(state.runs, running, { mtimeMs: NOW - DAY });
    await expect(runsRmCommand([ids[0] ?? "", running], io(state.env))).rejects.toThrow(
      /may still be running/,
    );
    expect(readdirSync(state.runs).sort()).toEqual([...before, `${running}.jsonl`].sort());
  });
});

describe("harness runs prune", () => {
  it("applies the limits from env now, and --dry-run only says what it would remove", async () => {
    using state = makeStateHome();
    const ids = threeRuns(state.runs);
    const env = { ...state.env, HARNESS_RUNS_MAX_AGE_DAYS: "1" };
    const dry = io(env);
    expect(await runsPruneCommand({ dryRun: true }, dry)).toBe(0);
    expect(dry.out()).toMatch(
      new RegExp(`^would remove run ${ids[0]} \\(age, .*\\)\nwould remove run ${ids[1]} \\(age,`),
    );
    expect(readdirSync(state.runs)).toHaveLength(4);
    const term = io(env);
    expect(await runsPruneCommand({}, term)).toBe(0);
    expect(term.out()).toContain(`removed run ${ids[0]} (age,`);
    expect(term.out()).toMatch(/KiB → [\d.]+ KiB in .* \(kept under 500 MiB, 1 days\)\n$/);
    expect(existsSync(join(state.runs, `${ids[2]}.jsonl`))).toBe(true);
    expect(readdirSync(state.runs)).toHaveLength(1);
  });

  it("refuses a limit that is not valid", async () => {
    using state = makeStateHome();
    await expect(runsPruneCommand({}, io({ ...state.env, HARNESS_RUNS_MAX_SIZE: "huge" }))).rejects.toThrow(
      /HARNESS_RUNS_MAX_SIZE/,
    );
  });
});

describe("harness runs: text a transcript carries", () => {
  /** OSC 52, OSC 0, cursor up and erase line, an 8-bit CSI, a bidi override and zero-width characters. */
  const HOSTILE =
    "\u001b]52;c;ZXZpbA==\u0007\u001b]0;pwned\u0007\u001b[1A\u001b[2K\u009b31m\u202eexe.txt\u200b\ufeff";
  const SHOWN =
    "\\x1b]52;c;ZXZpbA==\\x07\\x1b]0;pwned\\x07\\x1b[1A\\x1b[2K\\x9b31m\\u202eexe.txt\\u200b\\ufeff";
  // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for raw control characters
  const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/;

  function hostileRun(runsDir: string): string {
    const id = runIdAt(NOW - 3_600_000);
    writeRun(runsDir, id, {
      startMs: NOW - 3_600_000,
      mtimeMs: NOW - 3_600_000,
      run: {
        task: `task ${HOSTILE}`,
        workspace: `/srv/${HOSTILE}`,
        commands: [{ command: `touch ${HOSTILE}`, exitCode: 1, stderr: `no: ${HOSTILE} end\n` }],
        end: {
          status: `error${HOSTILE}` as "error",
          turns: 1,
          usage: usageOf(10, 1),
          finalText: `made ${HOSTILE} end`,
        },
      },
    });
    return id;
  }

  it("the table shows every control character as an escape, the status too", async () => {
    using state = makeStateHome();
    hostileRun(state.runs);
    const term = io(state.env, 400);
    expect(await runsListCommand({}, term)).toBe(0);
    expect(term.out()).not.toMatch(RAW);
    expect(term.out()).toContain(`error${SHOWN}`);
    expect(term.out()).toContain(`task ${SHOWN}`);
  });

  it("runs show prints none of them raw, and shows where each was", async () => {
    using state = makeStateHome();
    const id = hostileRun(state.runs);
    const term = io(state.env);
    expect(await runsShowCommand(id, term)).toBe(0);
    expect(term.out()).not.toMatch(RAW);
    for (const piece of [
      `task ${SHOWN}`,
      `/srv/${SHOWN}`,
      `$ touch ${SHOWN}`,
      `stderr: no: ${SHOWN} end`,
      `made ${SHOWN} end`,
    ])
      expect(term.out()).toContain(piece);
  });

  it("the JSON listing keeps the text as it was", async () => {
    using state = makeStateHome();
    hostileRun(state.runs);
    const term = io(state.env);
    expect(await runsListCommand({ outputFormat: "json" }, term)).toBe(0);
    expect((JSON.parse(term.out()) as { task: string }[])[0]?.task).toBe(`task ${HOSTILE}`);
  });
});
