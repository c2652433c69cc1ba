/**
 * A run's `steps.jsonl`: one StepRecord per snapshot, appended, never rewritten. The workspace after
 * step N is every delta up to the last line of step N applied in order. Lines are read as data: a
 * path that is not a safe relative path, or an entry of an unknown type, makes the file unreadable
 * rather than steering a restore outside its directory.
 */
import { closeSync, fstatSync, ftruncateSync, mkdirSync, openSync, readFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "../errors.js";
import { writingTo } from "./blob-store.js";
import { STEPS_FILE } from "./checkpoint-paths.js";
import type { CheckpointEntry, IgnoredPaths, Manifest, StepRecord } from "./checkpoint-types.js";

export function appendStep(checkpointsDir: string, record: StepRecord): void {
  writingTo(checkpointsDir, () => mkdirSync(checkpointsDir, { recursive: true, mode: 0o700 }));
  const path = join(checkpointsDir, STEPS_FILE);
  writingTo(path, () => appendWhole(path, Buffer.from(`${JSON.stringify(record)}\n`, "utf8")));
}

/** Appends `line` with nothing of it left behind when it does not fit. */
function appendWhole(path: string, line: Buffer): void {
  const fd = openSync(path, "a", 0o600);
  try {
    const before = fstatSync(fd).size;
    let done = 0;
    try {
      while (done < line.length) done += writeSync(fd, line, done, line.length - done);
    } catch (error) {
      // A full disk: the line that did not fit is cut back, so a continued run's next line does not
      // follow half a line (which would make the whole file unreadable).
      if (done > 0) ftruncateSync(fd, before);
      throw error;
    }
  } finally {
    closeSync(fd);
  }
}

/** Every line of the run's steps.jsonl, checked; [] when the run has no checkpoints. */
export function readSteps(checkpointsDir: string): StepRecord[] {
  let text: string;
  try {
    text = readFileSync(join(checkpointsDir, STEPS_FILE), "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw error;
  }
  const records: StepRecord[] = [];
  for (const [index, line] of text.split("\n").entries()) {
    if (line.trim() === "") continue;
    let record: StepRecord;
    try {
      record = JSON.parse(line) as StepRecord;
    } catch {
      // The last line cut while written (the process was killed): the steps before it stand.
      if (index === text.split("\n").length - 1) break;
      throw new ConfigError(`${STEPS_FILE} line ${index + 1} is not JSON`);
    }
    checkRecord(record, index + 1);
    records.push(record);
  }
  return records;
}

/** The steps recorded (each once, ascending), and the first step a snapshot gave up at. */
export function stepsOf(records: readonly StepRecord[]): { steps: number[]; gaveUpAt?: number } {
  const steps = [...new Set(records.filter((r) => r.gaveUp === undefined).map((r) => r.step))];
  const gaveUp = records.find((r) => r.gaveUp !== undefined);
  return gaveUp === undefined ? { steps } : { steps, gaveUpAt: gaveUp.step };
}

/** The workspace after `step` (its last line), or undefined when no line records that step. */
export function manifestAt(records: readonly StepRecord[], step: number): Manifest | undefined {
  let last = -1;
  records.forEach((record, index) => {
    if (record.step === step && record.gaveUp === undefined) last = index;
  });
  if (last < 0) return undefined;
  const manifest: Manifest = new Map();
  for (const record of records.slice(0, last + 1)) applyDelta(manifest, record.delta);
  return sorted(manifest);
}

/** What git's ignore rules left out of the checkpoint of `step` (its last line); none when nothing was. */
export function notCheckpointedAt(records: readonly StepRecord[], step: number): IgnoredPaths {
  let last = -1;
  records.forEach((record, index) => {
    if (record.step === step && record.gaveUp === undefined) last = index;
  });
  for (let index = last; index >= 0; index--) {
    const named = records[index]?.notCheckpointed;
    if (named !== undefined) return named;
  }
  return { paths: [] };
}

/** The manifest after every line (what the next snapshot compares with). */
export function latestManifest(records: readonly StepRecord[]): Manifest {
  const manifest: Manifest = new Map();
  for (const record of records) applyDelta(manifest, record.delta);
  return manifest;
}

function applyDelta(manifest: Manifest, delta: StepRecord["delta"]): void {
  for (const [path, entry] of Object.entries(delta)) {
    if (entry === null) manifest.delete(path);
    else manifest.set(path, entry);
  }
}

/** Parents before children: `a` < `a/b` < `a-b` would not hold with plain string order. */
function sorted(manifest: Manifest): Manifest {
  const key = (path: string) => path.split("/");
  const paths = [...manifest.keys()].sort((x, y) => {
    const a = key(x);
    const b = key(y);
    for (let i = 0; i < Math.min(a.length, b.length); i++) {
      if (a[i] !== b[i]) return (a[i] as string) < (b[i] as string) ? -1 : 1;
    }
    return a.length - b.length;
  });
  return new Map(paths.map((path) => [path, manifest.get(path) as CheckpointEntry]));
}

function checkRecord(record: StepRecord, line: number): void {
  const fail = (why: string): never => {
    throw new ConfigError(`${STEPS_FILE} line ${line}: ${why}`);
  };
  if (typeof record !== "object" || record === null) fail("not an object");
  if (!Number.isSafeInteger(record.step) || record.step < 0) fail('"step" must be an integer >= 0');
  if (typeof record.delta !== "object" || record.delta === null) fail('"delta" must be an object');
  const named = record.notCheckpointed;
  if (
    named !== undefined &&
    (typeof named !== "object" ||
      named === null ||
      !Array.isArray(named.paths) ||
      !named.paths.every((path) => typeof path === "string") ||
      (named.more !== undefined && !Number.isSafeInteger(named.more)))
  )
    fail('"notCheckpointed" must be a list of paths');
  for (const [path, entry] of Object.entries(record.delta)) {
    if (!isSafeRelativePath(path)) fail(`unsafe path ${JSON.stringify(path)}`);
    if (entry === null) continue;
    if (!["file", "directory", "symlink"].includes(entry.type)) fail(`bad type for ${JSON.stringify(path)}`);
    if (entry.type === "file" && !/^[0-9a-f]{64}$/.test(entry.sha256 ?? ""))
      fail(`bad blob name for ${JSON.stringify(path)}`);
    if (entry.type === "symlink" && typeof entry.linkname !== "string")
      fail(`bad link target for ${JSON.stringify(path)}`);
    if (!Number.isInteger(entry.mode) || entry.mode < 0 || entry.mode > 0o777)
      fail(`bad mode for ${JSON.stringify(path)}`);
  }
}

/** `a/b`: relative, no empty, ".", ".." or NUL component (a backslash is an ordinary character here). */
function isSafeRelativePath(path: string): boolean {
  return path
    .split("/")
    .every((part) => part !== "" && part !== "." && part !== ".." && !part.includes("\0"));
}
