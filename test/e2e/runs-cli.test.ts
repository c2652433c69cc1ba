/**
 * `harness runs`, `runs show`, `runs rm` and `runs prune` through the built CLI, with XDG_STATE_HOME
 * pointed at a temporary directory of fixture transcripts. No Docker and no model: these commands
 * only read and remove files.
 */
import { existsSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../support/run-cli.js";
import { makeStateHome, runIdAt, usageOf, writeRun } from "../support/run-fixtures.js";

const NOW = Date.now();
const DAY = 86_400_000;

/** Three finished runs (40 days, 2 days and 1 hour old), the oldest with saved outputs. */
function fixtures(runsDir: string): string[] {
  return [40 * DAY, 2 * DAY, 3_600_000].map((age, i) => {
    const id = runIdAt(NOW - age);
    writeRun(runsDir, id, {
      startMs: NOW - age,
      mtimeMs: NOW - age,
      outputsBytes: i === 0 ? 100_000 : 0,
      run: {
        task: `fixture task ${i}`,
        workspace: `/srv/project${i}`,
        commands: [{ command: `make target${i}`, exitCode: i === 1 ? 2 : 0, stderr: "make: *** failed\n" }],
        end: { status: "submitted", turns: 2, usage: usageOf(100_000, 10_000) },
      },
    });
    return id;
  });
}

describe("harness runs end to end", () => {
  it("lists the runs newest first as a table and as JSON", async () => {
    using state = makeStateHome();
    const ids = fixtures(state.runs);
    const table = await runCli(["runs"], { env: { XDG_STATE_HOME: state.home } });
    expect(table.stderr).toBe("");
    expect(table.code).toBe(0);
    const rows = table.stdout.split("\n");
    expect(rows[0]).toMatch(/^RUN +STARTED +STATUS +TURNS +COST +SIZE +WORKSPACE +TASK$/);
    expect(rows.slice(1, 4).map((row) => row.split(" ")[0])).toEqual([...ids].reverse());
    expect(rows[1]).toMatch(/1h ago +submitted +2 +\$0\.45 .*\/srv\/project2 +fixture task 2$/);
    expect(table.stdout).toContain(`3 runs, `);

    const json = await runCli(["runs", "--output-format", "json"], { env: { XDG_STATE_HOME: state.home } });
    expect(json.code).toBe(0);
    const runs = JSON.parse(json.stdout) as Array<{ id: string; outputsBytes: number; status: string }>;
    expect(runs.map((run) => run.id)).toEqual([...ids].reverse());
    expect(runs[2]).toMatchObject({ outputsBytes: 100_000, status: "submitted" });
  });

  it("shows a run by prefix, and exits 2 naming the candidates for an ambiguous one", async () => {
    using state = makeStateHome();
    const ids = fixtures(state.runs);
    const id = ids[1] ?? "";
    const shown = await runCli(["runs", "show", id.slice(0, 16)], { env: { XDG_STATE_HOME: state.home } });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`run        ${id}`);
    expect(shown.stdout).toContain("[1] $ make target1\n    exit 2 · 42 ms\n    stderr: make: *** failed");
    expect(shown.stdout).toContain("ended: submitted after 2 turns");

    const ambiguous = await runCli(["runs", "show", "2"], { env: { XDG_STATE_HOME: state.home } });
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toMatch(/^harness: '2' matches 3 runs: .*; give more of the id\n$/);
  });

  it("names a run by last, last~N, or a unique suffix (the pid) as well as its id", async () => {
    using state = makeStateHome();
    const ids = fixtures(state.runs);
    const mine = runIdAt(NOW - 2 * DAY + 1000, 4242);
    writeRun(state.runs, mine, { startMs: NOW - 2 * DAY + 1000, mtimeMs: NOW, run: { task: "by pid" } });
    const env = { XDG_STATE_HOME: state.home };
    const show = async (id: string) => (await runCli(["runs", "show", id], { env })).stdout;
    expect(await show("last")).toContain(`run        ${ids[2]}`);
    expect(await show("last~1")).toContain(`run        ${mine}`);
    expect(await show("last~3")).toContain(`run        ${ids[0]}`);
    expect(await show("4242")).toContain(`run        ${mine}`);
    const beyond = await runCli(["runs", "show", "last~4"], { env });
    expect(beyond.code).toBe(2);
    expect(beyond.stderr).toBe("harness: no run 'last~4': there are 4 runs (last~3 is the oldest)\n");
  });

  it("removes one run, and prunes by age while leaving a --transcript file elsewhere alone", async () => {
    using state = makeStateHome();
    const ids = fixtures(state.runs);
    const env = { XDG_STATE_HOME: state.home };
    const removed = await runCli(["runs", "rm", ids[2] ?? ""], { env });
    expect(removed.code).toBe(0);
    expect(removed.stdout).toMatch(new RegExp(`^removed ${ids[2]} \\(`));
    expect(existsSync(join(state.runs, `${ids[2]}.jsonl`))).toBe(false);

    const elsewhere = join(state.home, "mine");
    mkdirSync(elsewhere);
    const own = writeRun(elsewhere, runIdAt(NOW - 90 * DAY), { mtimeMs: NOW - 90 * DAY, outputsBytes: 10 });
    const pruned = await runCli(["runs", "prune"], { env });
    expect(pruned.code).toBe(0);
    expect(pruned.stdout).toContain(`removed run ${ids[0]} (age, `);
    expect(readdirSync(state.runs)).toEqual([`${ids[1]}.jsonl`]);
    expect(existsSync(own.transcript) && existsSync(own.outputs)).toBe(true);
  });

  it("states where runs are kept and the retention defaults in its help", async () => {
    const help = await runCli(["runs", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("~/.local/state/harness/runs");
    expect(help.stdout).toMatch(/HARNESS_RUNS_MAX_SIZE \(default 500m/);
    expect(help.stdout).toMatch(/HARNESS_RUNS_MAX_AGE_DAYS \(default 30/);
  });
});
