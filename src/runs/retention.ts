/**
 * Keeps the runs directory bounded: runs not touched for longer than the age limit go, then, while the
 * directory is over the size limit, saved outputs go (oldest run first), then whole runs (oldest
 * first). A run that may still be running (run-activity.ts), the run given in `keep`, and files harness
 * did not name (a `--transcript` the user pointed into the directory) are never removed.
 *
 * Pruning never throws and never fails a run: a read-only or broken state directory is reported in
 * the result. Two harness processes may prune at once; a file the other one removed first is simply
 * gone (`rm` with `force` ignores ENOENT).
 */
import { rmSync } from "node:fs";
import createDebug from "debug";
import { sweepSharedBlobs } from "../checkpoints/blob-sweep.js";
import { parseByteSize } from "../config.js";
import { ConfigError } from "../errors.js";
import { isHarnessRunId, managedRunIdOf, runsDir, sharedBlobsDirOf } from "../state/run-layout.js";
import { sanitizeForTerminal } from "../terminal/sanitize.js";
import { RETENTION_DEFAULTS, RETENTION_ENV } from "./retention-defaults.js";
import { isRunActive } from "./run-activity.js";
import { describeFsError, type RunFiles, scanRunsDir } from "./run-files.js";

const debug = createDebug("harness:runs");

const DAY_MS = 24 * 60 * 60 * 1000;

export { RETENTION_DEFAULTS, RETENTION_ENV };

/** How much the runs directory keeps. */
export interface RetentionLimits {
  /** Most bytes of runs kept; undefined: no size limit. */
  maxBytes: number | undefined;
  /** Runs not modified for longer than this (ms) are removed; undefined: no age limit. */
  maxAgeMs: number | undefined;
}

/**
 * The limits from `HARNESS_RUNS_MAX_SIZE` ("500m", "2g", bytes, or "off") and
 * `HARNESS_RUNS_MAX_AGE_DAYS` (days, fractions allowed, or "off"). Throws `ConfigError` on a bad value.
 */
export function retentionLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): RetentionLimits {
  const size = env[RETENTION_ENV.maxSize]?.trim();
  const age = env[RETENTION_ENV.maxAgeDays]?.trim();
  let maxAgeMs: number | undefined = RETENTION_DEFAULTS.maxAgeDays * DAY_MS;
  if (age !== undefined && age !== "") {
    const days = Number(age);
    if (isOff(age)) maxAgeMs = undefined;
    else if (Number.isFinite(days) && days > 0) maxAgeMs = days * DAY_MS;
    else
      throw new ConfigError(
        `${RETENTION_ENV.maxAgeDays} must be a number of days > 0 or 'off', got '${age}'`,
      );
  }
  return {
    maxBytes:
      size === undefined || size === ""
        ? RETENTION_DEFAULTS.maxBytes
        : isOff(size)
          ? undefined
          : parseByteSize(RETENTION_ENV.maxSize, size),
    maxAgeMs,
  };
}

function isOff(value: string): boolean {
  return /^(?:off|none|unlimited)$/i.test(value);
}

/** One removal. */
export interface PruneAction {
  /** The run. */
  id: string;
  /** Its saved outputs and checkpoints only, or the whole run (transcript, outputs, checkpoints). */
  what: "outputs" | "run";
  /** Which limit asked for it. */
  reason: "age" | "size";
  /** Bytes it frees. */
  bytes: number;
  /** The paths removed, outputs before the transcript. */
  paths: string[];
}

/** What a prune did. */
export interface PruneReport {
  /** The runs directory. */
  dir: string;
  /** Bytes of harness's runs before and after. */
  bytesBefore: number;
  bytesAfter: number;
  /** Removals done. */
  removed: PruneAction[];
  /** Removals that failed (read-only directory, …), with why. */
  failed: Array<{ action: PruneAction; error: string }>;
  /** Runs left alone because they may still be running (or were asked to be kept). */
  protectedRuns: number;
  /** Set when the directory could not be looked at; nothing was removed. */
  error?: string;
}

export interface PruneOptions {
  /** Now, ms since the epoch. */
  now?: number;
  /** Run ids never removed (the run that is pruning). */
  keep?: readonly string[];
  /** Process check, for tests. */
  isAlive?: (pid: number) => boolean;
}

/** What to remove from `runs` to meet `limits`, in order. Pure: looks at nothing on disk. */
export function planPrune(
  runs: readonly RunFiles[],
  limits: RetentionLimits,
  options: PruneOptions & { now: number },
): { actions: PruneAction[]; protectedRuns: number; bytes: number } {
  const keep = new Set(options.keep ?? []);
  const activity = { now: options.now, ...(options.isAlive ? { isAlive: options.isAlive } : {}) };
  // Only names harness gave are its to remove or to count.
  const managed = runs.filter((run) => isHarnessRunId(run.id));
  const candidates = managed
    .filter((run) => !keep.has(run.id) && !isRunActive(run.id, run.modifiedMs, activity))
    .sort((a, b) => a.modifiedMs - b.modifiedMs || (a.id < b.id ? -1 : 1));
  const bytes = managed.reduce((sum, run) => sum + runBytes(run), 0);
  let total = bytes;
  const actions: PruneAction[] = [];
  const gone = new Set<string>();
  const removeRun = (run: RunFiles, reason: PruneAction["reason"], outputsLeft: boolean) => {
    const paths = [
      ...(outputsLeft ? extraPaths(run) : []),
      ...(run.transcriptPath === undefined ? [] : [run.transcriptPath]),
    ];
    const freed = run.transcriptBytes + (outputsLeft ? run.outputsBytes + run.checkpointsBytes : 0);
    actions.push({ id: run.id, what: "run", reason, bytes: freed, paths });
    total -= freed;
    gone.add(run.id);
  };

  const maxAgeMs = limits.maxAgeMs;
  if (maxAgeMs !== undefined) {
    for (const run of candidates) if (options.now - run.modifiedMs > maxAgeMs) removeRun(run, "age", true);
  }
  const maxBytes = limits.maxBytes;
  if (maxBytes !== undefined) {
    const outputsGone = new Set<string>();
    for (const run of candidates) {
      if (total <= maxBytes) break;
      if (gone.has(run.id) || extraPaths(run).length === 0) continue;
      const freed = run.outputsBytes + run.checkpointsBytes;
      actions.push({ id: run.id, what: "outputs", reason: "size", bytes: freed, paths: extraPaths(run) });
      total -= freed;
      outputsGone.add(run.id);
    }
    for (const run of candidates) {
      if (total <= maxBytes) break;
      if (!gone.has(run.id)) removeRun(run, "size", !outputsGone.has(run.id));
    }
  }
  return { actions, protectedRuns: managed.length - candidates.length, bytes };
}

/** All of a run's bytes: transcript, saved outputs, its share of the checkpoints. */
export function runBytes(run: RunFiles): number {
  return run.transcriptBytes + run.outputsBytes + run.checkpointsBytes;
}

/** A run's saved outputs and checkpoints: what goes first when the directory is over its size. */
function extraPaths(run: RunFiles): string[] {
  return [run.outputsPath, run.checkpointsPath].filter((path): path is string => path !== undefined);
}

/** Prunes `dir` to `limits` now. Never throws. */
export function pruneRuns(dir: string, limits: RetentionLimits, options: PruneOptions = {}): PruneReport {
  const report: PruneReport = {
    dir,
    bytesBefore: 0,
    bytesAfter: 0,
    removed: [],
    failed: [],
    protectedRuns: 0,
  };
  try {
    const scan = scanRunsDir(dir);
    if (scan.error !== undefined) return { ...report, error: scan.error };
    const plan = planPrune(scan.runs, limits, { ...options, now: options.now ?? Date.now() });
    report.bytesBefore = plan.bytes;
    report.bytesAfter = plan.bytes;
    report.protectedRuns = plan.protectedRuns;
    for (const action of plan.actions) {
      try {
        // Outputs first: a run that cannot be removed whole keeps its transcript, not a stray directory.
        for (const path of action.paths) rmSync(path, { recursive: true, force: true, maxRetries: 2 });
        report.removed.push(action);
        report.bytesAfter -= action.bytes;
        debug("removed %s of run %s (%s, %d bytes)", action.what, action.id, action.reason, action.bytes);
      } catch (error) {
        report.failed.push({ action, error: describeFsError(error) });
      }
    }
    // Blobs no run holds any more (their runs' links just went): removed, failures ignored.
    if (report.removed.length > 0) sweepSharedBlobs(sharedBlobsDirOf(dir));
  } catch (error) {
    report.error = describeFsError(error);
  }
  return report;
}

export interface PruneAfterRunOptions {
  /** The run's transcript: never removed (when it is elsewhere, `--transcript`, it is not looked at). */
  transcriptPath: string;
  /** Env for the limits and the state directory. Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Where to say that pruning failed (one line each). Default: stderr with a "harness: " prefix. */
  warn?: (line: string) => void;
}

/**
 * Retention after a run: prunes the runs directory to the limits in env, keeping this run. Never
 * throws and returns nothing to act on: a failure is one warning line, the run's outcome stands.
 */
export function pruneAfterRun(options: PruneAfterRunOptions): void {
  const warn =
    options.warn ??
    ((line: string) => process.stderr.write(`harness: ${sanitizeForTerminal(line, { oneLine: true })}\n`));
  try {
    const env = options.env ?? process.env;
    const dir = runsDir(env);
    const ownId = managedRunIdOf(options.transcriptPath, dir);
    let limits: RetentionLimits;
    try {
      limits = retentionLimitsFromEnv(env);
    } catch (error) {
      warn(`old runs were not pruned: ${describeFsError(error)}`);
      return;
    }
    const report = pruneRuns(dir, limits, ownId === undefined ? {} : { keep: [ownId] });
    if (report.error !== undefined) warn(`old runs were not pruned: ${report.error}`);
    const first = report.failed[0];
    if (first !== undefined)
      warn(`could not remove ${report.failed.length} old run file(s) in ${dir}: ${first.error}`);
  } catch (error) {
    try {
      warn(`old runs were not pruned: ${describeFsError(error)}`);
    } catch {
      // Nowhere to say it: the run's outcome stands.
    }
  }
}
