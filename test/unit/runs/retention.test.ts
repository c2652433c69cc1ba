import { spawn } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../src/errors.js";
import {
  type PruneReport,
  planPrune,
  pruneAfterRun,
  pruneRuns,
  RETENTION_DEFAULTS,
  retentionLimitsFromEnv,
} from "../../../src/runs/retention.js";
import { scanRunsDir } from "../../../src/runs/run-files.js";
import { makeStateHome, runIdAt, writeRun } from "../../support/run-fixtures.js";

const DAY = 86_400_000;
const NOW = Date.now();
const dead = () => false;
const CHILD = fileURLToPath(new URL("./prune-child.ts", import.meta.url));
const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const isRoot = process.getuid?.() === 0;

/** Writes a run last touched `daysAgo` days ago, with `outputsBytes` of saved output. */
function oldRun(runsDir: string, daysAgo: number, outputsBytes = 0): string {
  const id = runIdAt(NOW - daysAgo * DAY);
  writeRun(runsDir, id, { startMs: NOW - daysAgo * DAY, mtimeMs: NOW - daysAgo * DAY, outputsBytes });
  return id;
}

function present(runsDir: string): string[] {
  return readdirSync(runsDir).sort();
}

/** Runs prune-child.ts in its own process (as another user when `uid` is given). */
function child(args: string[], options: { uid?: number; env?: NodeJS.ProcessEnv } = {}) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const proc = spawn(process.execPath, ["--import", "tsx", CHILD, ...args], {
      cwd: ROOT,
      env: { PATH: process.env["PATH"] ?? "", HOME: "/tmp", ...options.env },
      ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.uid }),
    });
    let stdout = "";
    let stderr = "";
    proc.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk;
    });
    proc.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk;
    });
    proc.on("error", reject);
    proc.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("retentionLimitsFromEnv", () => {
  it("defaults to 500 MiB and 30 days, reads sizes and days, and turns a limit off", () => {
    expect(retentionLimitsFromEnv({})).toEqual({ maxBytes: 500 * 1024 ** 2, maxAgeMs: 30 * DAY });
    expect(RETENTION_DEFAULTS).toEqual({ maxBytes: 500 * 1024 ** 2, maxAgeDays: 30 });
    expect(retentionLimitsFromEnv({ HARNESS_RUNS_MAX_SIZE: "2g", HARNESS_RUNS_MAX_AGE_DAYS: "0.5" })).toEqual(
      {
        maxBytes: 2 * 1024 ** 3,
        maxAgeMs: DAY / 2,
      },
    );
    expect(
      retentionLimitsFromEnv({ HARNESS_RUNS_MAX_SIZE: "off", HARNESS_RUNS_MAX_AGE_DAYS: "OFF" }),
    ).toEqual({
      maxBytes: undefined,
      maxAgeMs: undefined,
    });
  });

  it("refuses values that are not a size or a number of days", () => {
    expect(() => retentionLimitsFromEnv({ HARNESS_RUNS_MAX_SIZE: "lots" })).toThrow(ConfigError);
    expect(() => retentionLimitsFromEnv({ HARNESS_RUNS_MAX_AGE_DAYS: "-1" })).toThrow(
      /HARNESS_RUNS_MAX_AGE_DAYS/,
    );
  });
});

describe("pruneRuns", () => {
  it("removes runs not touched within the age limit, outputs and transcript", () => {
    using state = makeStateHome();
    const old = oldRun(state.runs, 40, 1000);
    const recent = oldRun(state.runs, 10, 1000);
    const report = pruneRuns(
      state.runs,
      { maxBytes: undefined, maxAgeMs: 30 * DAY },
      { now: NOW, isAlive: dead },
    );
    expect(report.removed).toEqual([
      expect.objectContaining({
        id: old,
        what: "run",
        reason: "age",
        paths: [expect.stringMatching(/\.outputs$/), expect.stringMatching(/\.jsonl$/)],
      }),
    ]);
    expect(present(state.runs)).toEqual([`${recent}.jsonl`, `${recent}.outputs`]);
    expect(report.bytesAfter).toBe(report.bytesBefore - (report.removed[0]?.bytes ?? 0));
  });

  it("over the size limit, removes saved outputs (oldest first) before any transcript", () => {
    using state = makeStateHome();
    const ids = [
      oldRun(state.runs, 4, 10_000),
      oldRun(state.runs, 3, 10_000),
      oldRun(state.runs, 2, 10_000),
      oldRun(state.runs, 1, 10_000),
    ];
    const total = scanRunsDir(state.runs).runs.reduce(
      (sum, run) => sum + run.transcriptBytes + run.outputsBytes,
      0,
    );
    // Room for everything but two outputs: the two oldest outputs go, every transcript stays.
    const report = pruneRuns(
      state.runs,
      { maxBytes: total - 15_000, maxAgeMs: undefined },
      { now: NOW, isAlive: dead },
    );
    expect(report.removed.map((action) => [action.id, action.what, action.reason])).toEqual([
      [ids[0], "outputs", "size"],
      [ids[1], "outputs", "size"],
    ]);
    expect(present(state.runs)).toEqual([
      `${ids[0]}.jsonl`,
      `${ids[1]}.jsonl`,
      `${ids[2]}.jsonl`,
      `${ids[2]}.outputs`,
      `${ids[3]}.jsonl`,
      `${ids[3]}.outputs`,
    ]);
    expect(report.bytesAfter).toBeLessThanOrEqual(total - 15_000);
  });

  it("when outputs are not enough, removes whole runs oldest first until under the limit", () => {
    using state = makeStateHome();
    const ids = [oldRun(state.runs, 3, 5000), oldRun(state.runs, 2), oldRun(state.runs, 1)];
    const newest = scanRunsDir(state.runs).runs.find((run) => run.id === ids[2]);
    const report = pruneRuns(
      state.runs,
      { maxBytes: newest?.transcriptBytes ?? 0, maxAgeMs: undefined },
      { now: NOW, isAlive: dead },
    );
    expect(report.removed.map((action) => [action.id, action.what])).toEqual([
      [ids[0], "outputs"],
      [ids[0], "run"],
      [ids[1], "run"],
    ]);
    expect(present(state.runs)).toEqual([`${ids[2]}.jsonl`]);
  });

  it("never removes a run that may be running, the run asked to be kept, or a file harness did not name", () => {
    using state = makeStateHome();
    const alivePid = 31337;
    const alive = runIdAt(NOW - 90 * DAY, alivePid);
    writeRun(state.runs, alive, { mtimeMs: NOW - 90 * DAY, outputsBytes: 100 });
    const justWritten = runIdAt(NOW - 90 * DAY);
    writeRun(state.runs, justWritten, { mtimeMs: NOW - 5_000 });
    const kept = oldRun(state.runs, 80);
    writeFileSync(join(state.runs, "my-own.jsonl"), "mine\n");
    const gone = oldRun(state.runs, 70);
    const report = pruneRuns(
      state.runs,
      { maxBytes: 1, maxAgeMs: DAY },
      { now: NOW, keep: [kept], isAlive: (pid) => pid === alivePid },
    );
    expect(report.removed.map((action) => action.id)).toEqual([gone]);
    expect(report.protectedRuns).toBe(3);
    expect(present(state.runs)).toEqual(
      [`${alive}.jsonl`, `${alive}.outputs`, `${justWritten}.jsonl`, `${kept}.jsonl`, "my-own.jsonl"].sort(),
    );
  });

  it("reports a directory it cannot list instead of throwing, and has nothing to do without one", () => {
    using state = makeStateHome();
    const file = join(state.home, "not-a-dir");
    writeFileSync(file, "");
    expect(pruneRuns(join(state.home, "missing"), { maxBytes: 1, maxAgeMs: 1 })).toMatchObject({
      removed: [],
      failed: [],
    });
    expect(pruneRuns(join(file, "runs"), { maxBytes: 1, maxAgeMs: 1 }).error).toBeUndefined();
  });

  it("plans nothing when under both limits", () => {
    using state = makeStateHome();
    oldRun(state.runs, 1, 100);
    const plan = planPrune(scanRunsDir(state.runs).runs, retentionLimitsFromEnv({}), {
      now: NOW,
      isAlive: dead,
    });
    expect(plan.actions).toEqual([]);
  });
});

describe("pruneRuns across processes", () => {
  it("two harness processes pruning the same directory at once both finish cleanly", async () => {
    using state = makeStateHome();
    for (let i = 0; i < 150; i++) {
      const id = runIdAt(NOW - (i + 2) * 60_000);
      writeRun(state.runs, id, { mtimeMs: NOW - (i + 2) * 60_000, outputsBytes: 3000, outputFiles: 10 });
    }
    const limits = JSON.stringify({ maxBytes: 100_000 });
    const barrier = join(state.home, "barrier");
    mkdirSync(barrier);
    const env = { PRUNE_BARRIER: barrier, PRUNE_PARTIES: "2" };
    const [a, b] = await Promise.all([
      child([state.runs, limits, String(NOW)], { env }),
      child([state.runs, limits, String(NOW)], { env }),
    ]);
    for (const run of [a, b]) {
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      const report = JSON.parse(run.stdout) as PruneReport;
      expect(report.error).toBeUndefined();
      expect(report.failed).toEqual([]);
      // Both planned against the full directory: the removals really raced.
      expect(report.removed.length).toBeGreaterThan(0);
    }
    const left = scanRunsDir(state.runs).runs;
    expect(left.reduce((sum, run) => sum + run.transcriptBytes + run.outputsBytes, 0)).toBeLessThanOrEqual(
      100_000,
    );
    expect(left.length).toBeGreaterThan(0);
  });

  it("in a state directory it cannot write, reports the failures and removes nothing", async () => {
    using state = makeStateHome();
    const ids = [oldRun(state.runs, 60, 1000), oldRun(state.runs, 50)];
    chmodSync(state.home, 0o755);
    const before = present(state.runs);
    // Root writes anywhere: the prune runs as nobody instead; a normal user gets a read-only directory.
    if (!isRoot) chmodSync(state.runs, 0o555);
    try {
      const uid = isRoot ? { uid: 65534 } : {};
      const run = await child([state.runs, JSON.stringify({ maxAgeMs: DAY }), String(NOW)], uid);
      expect(run.code).toBe(0);
      const report = JSON.parse(run.stdout) as PruneReport;
      expect(report.removed).toEqual([]);
      expect(report.failed.map((failure) => failure.action.id).sort()).toEqual([...ids].sort());
      expect(report.failed[0]?.error).toMatch(/EACCES|EPERM|EROFS/);
      expect(present(state.runs)).toEqual(before);

      const after = await child(["--after-run", join(state.runs, `${ids[1]}.jsonl`)], {
        ...uid,
        env: { XDG_STATE_HOME: state.home, HARNESS_RUNS_MAX_AGE_DAYS: "1" },
      });
      expect(after.code).toBe(0);
      expect(JSON.parse(after.stdout)).toEqual({
        warnings: [
          expect.stringMatching(/^could not remove 1 old run file\(s\) in .*: .*(EACCES|EPERM|EROFS)/),
        ],
      });
      expect(present(state.runs)).toEqual(before);
    } finally {
      chmodSync(state.runs, 0o755);
    }
  });
});

describe("pruneAfterRun", () => {
  it("keeps the run that just ended even when the limits want everything gone", () => {
    using state = makeStateHome();
    const own = oldRun(state.runs, 90, 1000);
    const other = oldRun(state.runs, 80, 1000);
    const warnings: string[] = [];
    pruneAfterRun({
      transcriptPath: join(state.runs, `${own}.jsonl`),
      env: { ...state.env, HARNESS_RUNS_MAX_SIZE: "1", HARNESS_RUNS_MAX_AGE_DAYS: "1" },
      warn: (line) => warnings.push(line),
    });
    expect(warnings).toEqual([]);
    expect(present(state.runs)).toEqual([`${own}.jsonl`, `${own}.outputs`]);
    expect(existsSync(join(state.runs, `${other}.jsonl`))).toBe(false);
  });

  it("never touches a --transcript file outside the runs directory, nor the outputs beside it", () => {
    using state = makeStateHome();
    const elsewhere = join(state.home, "project");
    mkdirSync(elsewhere);
    const id = runIdAt(NOW - 90 * DAY);
    const files = writeRun(elsewhere, id, { mtimeMs: NOW - 90 * DAY, outputsBytes: 1000 });
    const managed = oldRun(state.runs, 90);
    pruneAfterRun({
      transcriptPath: files.transcript,
      env: { ...state.env, HARNESS_RUNS_MAX_SIZE: "1" },
      warn: () => undefined,
    });
    expect(existsSync(files.transcript) && existsSync(files.outputs)).toBe(true);
    expect(existsSync(join(state.runs, `${managed}.jsonl`))).toBe(false);
  });

  it("warns and removes nothing when a limit in env is not valid; never throws", () => {
    using state = makeStateHome();
    const id = oldRun(state.runs, 90);
    const warnings: string[] = [];
    pruneAfterRun({
      transcriptPath: join(state.runs, "x.jsonl"),
      env: { ...state.env, HARNESS_RUNS_MAX_SIZE: "big" },
      warn: (line) => warnings.push(line),
    });
    expect(warnings).toEqual([
      expect.stringMatching(/^old runs were not pruned: HARNESS_RUNS_MAX_SIZE must look like/),
    ]);
    expect(existsSync(join(state.runs, `${id}.jsonl`))).toBe(true);
    expect(() =>
      pruneAfterRun({
        transcriptPath: "",
        env: state.env,
        warn: () => {
          throw new Error("stderr is gone");
        },
      }),
    ).not.toThrow();
  });
});
