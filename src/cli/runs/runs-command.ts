/**
 * `harness runs`, `runs show ID`, `runs rm ID…`, `runs prune`: the past runs in the state directory
 * (and the runs' kept copy-mode copies).
 */
import { existsSync, rmSync } from "node:fs";
import { sweepSharedBlobs } from "../../checkpoints/blob-sweep.js";
import { ConfigError, HarnessError } from "../../errors.js";
import {
  planPrune,
  pruneRuns,
  type RetentionLimits,
  retentionLimitsFromEnv,
  runBytes,
} from "../../runs/retention.js";
import { isRunActive } from "../../runs/run-activity.js";
import { findRun, listRuns } from "../../runs/run-catalog.js";
import { describeFsError, type RunFiles, scanRunsDir } from "../../runs/run-files.js";
import { formatRun } from "../../runs/run-show.js";
import { formatRunTable, runToJson, shownAge } from "../../runs/run-table.js";
import { readKeptCopies } from "../../sandbox/copy/kept/kept-copy-record.js";
import { stampAlive } from "../../state/process-stamp.js";
import { runsDir, sharedBlobsDirOf } from "../../state/run-layout.js";
import { sanitizeForTerminal } from "../../terminal/sanitize.js";
import { formatBytes } from "../../text/units.js";
import { MCP_SESSION_TASK } from "../../transcript/transcript-records.js";
import { EXIT } from "../exit-codes.js";

/** Where the commands write and what they read; tests pass their own. */
export interface RunsIo {
  /** Writes to stdout. */
  stdout(text: string): void;
  /** Writes to stderr. */
  stderr(text: string): void;
  /** stdout's width when it is a terminal. */
  columns?: number;
  /** Env: XDG_STATE_HOME, HARNESS_RUNS_*, HARNESS_PRICE_*. */
  env: NodeJS.ProcessEnv;
  /** Now, ms since the epoch. */
  now?: () => number;
  /** True once stdout's reader went away (`| head`): stop writing. */
  stdoutGone?: () => boolean;
}

/** `harness runs [--output-format json]`. */
export async function runsListCommand(
  flags: { outputFormat?: string },
  io: RunsIo = processIo(),
): Promise<number> {
  const format = flags.outputFormat ?? "text";
  if (format !== "text" && format !== "json")
    throw new ConfigError(`--output-format must be text or json, got '${format}'`);
  const dir = runsDir(io.env);
  const now = io.now?.() ?? Date.now();
  const runs = listRuns(dir, { env: io.env, now });
  if (format === "json") {
    const kept = await keptRunCopies(io.env);
    // A run's kept copies: its id, or `ID.N` for a continued run's (docs/copy-mode.md).
    const keptOf = (id: string) =>
      kept.filter((r) => r.id === id || r.id.startsWith(`${id}.`)).map((r) => r.id);
    io.stdout(
      `${JSON.stringify(
        runs.map((run) => ({ ...runToJson(run), keptCopies: keptOf(run.id) })),
        null,
        2,
      )}\n`,
    );
    return EXIT.ok;
  }
  if (runs.length === 0) {
    say(io, `no runs in ${dir}\n`);
    return EXIT.ok;
  }
  const table = formatRunTable(runs, { now, ...(io.columns === undefined ? {} : { columns: io.columns }) });
  say(io, `${table.join("\n")}\n`);
  const interrupted = runs.filter((run) => run.status === "interrupted");
  const run = interrupted.find((r) => r.task !== MCP_SESSION_TASK);
  if (run !== undefined)
    say(
      io,
      `interrupted: its harness process is gone (killed) and the run never ended; \`harness run --resume ${run.id}\` (or --continue in its workspace) goes on with its conversation, a tool call it was in answered as not completed\n`,
    );
  const mcp = interrupted.find((r) => r.task === MCP_SESSION_TASK);
  if (mcp !== undefined)
    say(
      io,
      `interrupted: ${mcp.id} was an MCP session whose harness process is gone (killed); its client holds the conversation, so it is not continued: its checkpoints and outputs stay (\`harness runs diff ${mcp.id}\`)\n`,
    );
  for (const line of await keptCopyLines(io.env, now)) say(io, line);
  const bytes = runs.reduce(
    (sum, run) => sum + run.transcriptBytes + run.outputsBytes + run.checkpointsBytes,
    0,
  );
  say(
    io,
    `${runs.length} run${runs.length === 1 ? "" : "s"}, ${formatBytes(bytes)} in ${dir} (${describeLimits(io.env)})\n`,
  );
  return EXIT.ok;
}

/** `harness runs show ID`: ID is a run id, a unique prefix of one, or a transcript's path. */
export async function runsShowCommand(id: string, io: RunsIo = processIo()): Promise<number> {
  const dir = runsDir(io.env);
  let path: string;
  const header: string[] = [];
  if ((id.includes("/") || id.endsWith(".jsonl")) && existsSync(id)) {
    path = id;
    header.push(`transcript ${path}`);
  } else {
    const run = findRun(scanOrThrow(dir), id);
    if (run.transcriptPath === undefined)
      throw new ConfigError(
        `run ${run.id} has no transcript (only saved outputs in ${run.outputsPath ?? dir})`,
      );
    path = run.transcriptPath;
    header.push(`run        ${run.id}`, `transcript ${path} (${formatBytes(run.transcriptBytes)})`);
    if (run.outputsPath !== undefined)
      header.push(`outputs    ${run.outputsPath} (${formatBytes(run.outputsBytes)})`);
    if (run.checkpointsPath !== undefined)
      header.push(`checkpoints ${run.checkpointsPath} (${formatBytes(run.checkpointsBytes)})`);
  }
  say(io, `${header.join("\n")}\n`);
  try {
    for await (const line of formatRun(path, { env: io.env })) {
      if (io.stdoutGone?.()) return EXIT.brokenPipe;
      say(io, `${line}\n`);
    }
  } catch (error) {
    throw new HarnessError(`cannot read transcript '${path}': ${describeFsError(error)}`);
  }
  return EXIT.ok;
}

/** `harness runs rm ID…`: removes runs (transcript and saved outputs); refuses one that may be running. */
export async function runsRmCommand(ids: readonly string[], io: RunsIo = processIo()): Promise<number> {
  const dir = runsDir(io.env);
  const runs = scanOrThrow(dir);
  const now = io.now?.() ?? Date.now();
  // Every id is resolved before anything is removed: one typo removes nothing.
  const chosen = [...new Map(ids.map((id) => findRun(runs, id)).map((run) => [run.id, run])).values()];
  for (const run of chosen) {
    if (isRunActive(run.id, run.modifiedMs, { now }))
      throw new ConfigError(
        `run ${run.id} may still be running (its process is alive or it was written in the last minute); not removed`,
      );
  }
  for (const run of chosen) {
    try {
      for (const path of [run.outputsPath, run.checkpointsPath, run.transcriptPath])
        if (path !== undefined) rmSync(path, { recursive: true, force: true });
    } catch (error) {
      throw new HarnessError(`could not remove run ${run.id}: ${describeFsError(error)}`);
    }
    say(io, `removed ${run.id} (${formatBytes(runBytes(run))})\n`);
  }
  // The removed runs' links are gone: blobs no other run holds go too.
  if (chosen.length > 0) sweepSharedBlobs(sharedBlobsDirOf(dir));
  return EXIT.ok;
}

/** `harness runs prune [--dry-run]`: applies the retention limits now. */
export async function runsPruneCommand(
  flags: { dryRun?: boolean },
  io: RunsIo = processIo(),
): Promise<number> {
  const dir = runsDir(io.env);
  const limits = retentionLimitsFromEnv(io.env);
  const now = io.now?.() ?? Date.now();
  if (flags.dryRun) {
    const plan = planPrune(scanOrThrow(dir), limits, { now });
    for (const action of plan.actions)
      say(
        io,
        `would remove ${describeAction(action.what)} ${action.id} (${action.reason}, ${formatBytes(action.bytes)})\n`,
      );
    const freed = plan.actions.reduce((sum, action) => sum + action.bytes, 0);
    say(
      io,
      `${formatBytes(plan.bytes)} in ${dir}; would free ${formatBytes(freed)} (${describeLimits(io.env)})\n`,
    );
    return EXIT.ok;
  }
  const report = pruneRuns(dir, limits, { now });
  if (report.error !== undefined) throw new HarnessError(`cannot prune ${dir}: ${report.error}`);
  for (const action of report.removed)
    say(
      io,
      `removed ${describeAction(action.what)} ${action.id} (${action.reason}, ${formatBytes(action.bytes)})\n`,
    );
  for (const { action, error } of report.failed)
    io.stderr(
      sanitizeForTerminal(
        `harness: could not remove ${describeAction(action.what)} ${action.id}: ${error}\n`,
      ),
    );
  const kept = report.protectedRuns > 0 ? `; ${report.protectedRuns} in progress left alone` : "";
  say(
    io,
    `${formatBytes(report.bytesBefore)} → ${formatBytes(report.bytesAfter)} in ${dir} (${describeLimits(io.env)})${kept}\n`,
  );
  return report.failed.length > 0 ? EXIT.error : EXIT.ok;
}

/**
 * Text for people on stdout. Ids, paths and what a transcript holds can come from files the sandbox
 * could have written: shown as escapes, never obeyed. JSON is written as it is.
 */
function say(io: RunsIo, text: string): void {
  io.stdout(sanitizeForTerminal(text));
}

function describeAction(what: "outputs" | "run"): string {
  return what === "outputs" ? "saved outputs and checkpoints of" : "run";
}

function describeLimits(env: NodeJS.ProcessEnv): string {
  let limits: RetentionLimits;
  try {
    limits = retentionLimitsFromEnv(env);
  } catch (error) {
    return `limits: ${(error as Error).message}`;
  }
  const size = limits.maxBytes === undefined ? "no size limit" : `kept under ${formatBytes(limits.maxBytes)}`;
  const age = limits.maxAgeMs === undefined ? "no age limit" : `${limits.maxAgeMs / 86_400_000} days`;
  return `${size}, ${age}`;
}

function scanOrThrow(dir: string): RunFiles[] {
  const scan = scanRunsDir(dir);
  if (scan.error !== undefined) throw new HarnessError(`cannot list the runs directory: ${scan.error}`);
  return scan.runs;
}

/** The real process: stdout's width when a terminal, and a closed pipe noticed rather than thrown. */
export function processIo(): RunsIo {
  let gone = false;
  process.stdout.on("error", () => {
    gone = true;
  });
  return {
    stdout: (text) => {
      if (!gone) process.stdout.write(text);
    },
    stderr: (text) => process.stderr.write(text),
    ...(process.stdout.isTTY ? { columns: process.stdout.columns } : {}),
    env: process.env,
    stdoutGone: () => gone,
  };
}

/**
 * Runs whose copy-mode copy is kept (docs/copy-mode.md), from the records in the state directory
 * (no engine is asked): what it is and what to do with it.
 */
async function keptCopyLines(env: NodeJS.ProcessEnv, now: number): Promise<string[]> {
  const kept = await keptRunCopies(env);
  return kept.map(
    (r) =>
      `kept copy ${r.id} of ${r.root} (${shownAge(now - Date.parse(r.createdAt))}): its changes were not applied; harness apply ${r.id} lands them, harness rm ${r.id} drops them\n`,
  );
}

/** The records of runs' copies that are kept: open, and their session over. */
async function keptRunCopies(env: NodeJS.ProcessEnv) {
  return (await readKeptCopies(env)).filter(
    (r) => r.command === "run" && r.state === "open" && !stampAlive(r.owner),
  );
}
