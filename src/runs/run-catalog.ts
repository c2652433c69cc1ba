/**
 * The past runs in the runs directory, newest first, each with what its transcript says (read at its
 * ends only, run-summary.ts), its cost and its size on disk; and finding one run by its id, a
 * unique prefix or suffix of it, or `last~N`.
 */
import type { ExitStatus } from "../agent/exit-status.js";
import { ConfigError } from "../errors.js";
import type { TokenUsage } from "../model/model-client.js";
import { costUsd, resolvePricing } from "../model/pricing.js";
import { startOfRunId } from "../state/run-layout.js";
import { type ActivityOptions, isRecentlyWritten, isRunActive } from "./run-activity.js";
import { type RunFiles, scanRunsDir } from "./run-files.js";
import { runLiveness } from "./run-liveness.js";
import { summarizeTranscript, type TranscriptSummary } from "./run-summary.js";
import { SummaryIndex } from "./summary-index.js";

/**
 * How a run ended, as listed: the run_end status, or
 * `running` (no run_end yet and its process is alive or it was written within the last minute),
 * `interrupted` (no run_end, and the process that ran it, recorded in run-liveness.ts, is gone:
 * killed or crashed; `--continue` goes on with it), `unfinished` (the same for a run recorded before
 * that record existed: nothing is writing it),
 * `corrupt` / `unreadable` / `empty` (the transcript), `orphaned` (saved outputs without a transcript).
 */
export type RunStatus =
  | ExitStatus
  | "running"
  | "interrupted"
  | "unfinished"
  | "corrupt"
  | "unreadable"
  | "empty"
  | "orphaned";

/**
 * One past run: its files (`RunFiles`, sizes included) and what its transcript says
 * (`TranscriptSummary`), with the status, liveness and cost worked out from both.
 */
export interface RunListing
  extends Omit<RunFiles, "transcriptModifiedMs">,
    Pick<TranscriptSummary, "workspace" | "task" | "model" | "turns" | "usage" | "partial" | "problem"> {
  /** When it started, ms since the epoch (the run_start record's time, else the id's, else the mtime). */
  startedMs: number;
  /** How it ended. */
  status: RunStatus;
  /**
   * True when it may still be running: not ended and its process alive, or written within the last
   * minute.
   */
  active: boolean;
  /** Estimated cost in USD; null when the model's price is unknown or no model answered. */
  costUsd: number | null;
}

export interface CatalogOptions {
  /** Env for HARNESS_PRICE_* (cost). Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Now, ms since the epoch. */
  now?: number;
  /** Process check, for tests. */
  isAlive?: (pid: number) => boolean;
  /** Check of a run's live record (run-liveness.ts), for tests. */
  liveness?: (id: string) => "alive" | "gone" | undefined;
  /** Keep and use `.index.json` (what each transcript said when last listed). Default true. */
  index?: boolean;
}

/** Every run in `dir`, newest first. Throws `ConfigError` only when `dir` exists but cannot be listed. */
export function listRuns(dir: string, options: CatalogOptions = {}): RunListing[] {
  const scan = scanRunsDir(dir);
  if (scan.error !== undefined) throw new ConfigError(`cannot list the runs directory: ${scan.error}`);
  const now = options.now ?? Date.now();
  const price = pricer(options.env ?? process.env);
  const activity: ActivityOptions = { now, ...(options.isAlive ? { isAlive: options.isAlive } : {}) };
  const index = SummaryIndex.load(dir, options.index ?? true);
  const liveness = options.liveness ?? ((id: string) => runLiveness(dir, id));
  const runs = scan.runs
    .map((files) => describeRun(files, activity, index, price, liveness))
    .sort((a, b) => b.startedMs - a.startedMs || (a.id < b.id ? 1 : -1));
  index.save();
  return runs;
}

function describeRun(
  files: RunFiles,
  activity: ActivityOptions,
  index: SummaryIndex,
  price: (model: string, usage: TokenUsage) => number | null,
  liveness: (id: string) => "alive" | "gone" | undefined,
): RunListing {
  const path = files.transcriptPath;
  const summary =
    path === undefined
      ? undefined
      : index.summary(files.id, files.transcriptBytes, files.transcriptModifiedMs, () =>
          summarizeTranscript(path, { size: files.transcriptBytes }),
        );
  // The process check only where it changes the status: a run that has not ended. An ended run is
  // active only while it is being written (an interactive session between prompts).
  const ended = summary?.state === "ok" && summary.status !== undefined;
  // The run's own record of its process, when it has one, decides: the file times only guess.
  const live = ended || summary === undefined ? undefined : liveness(files.id);
  const active =
    live !== undefined
      ? live === "alive"
      : ended
        ? isRecentlyWritten(files.modifiedMs, activity.now)
        : isRunActive(files.id, files.modifiedMs, activity);
  const stopped = live === "gone" ? "interrupted" : "unfinished";
  const base = {
    id: files.id,
    modifiedMs: files.modifiedMs,
    active,
    transcriptBytes: files.transcriptBytes,
    outputsBytes: files.outputsBytes,
    checkpointsBytes: files.checkpointsBytes,
    ...(files.checkpointsPath === undefined ? {} : { checkpointsPath: files.checkpointsPath }),
    ...(files.transcriptPath === undefined ? {} : { transcriptPath: files.transcriptPath }),
    ...(files.outputsPath === undefined ? {} : { outputsPath: files.outputsPath }),
  };
  const idStart = () => startOfRunId(files.id) ?? files.modifiedMs;
  if (summary === undefined) {
    return {
      ...base,
      startedMs: idStart(),
      status: "orphaned",
      turns: 0,
      usage: noUsage(),
      costUsd: null,
      partial: false,
    };
  }
  let status: RunStatus;
  if (summary.state === "ok") status = summary.status ?? (active ? "running" : stopped);
  else if (summary.state === "empty") status = active ? "running" : live === "gone" ? "interrupted" : "empty";
  else status = summary.state;
  const problem =
    summary.problem ??
    (summary.cutMidRecord && !active ? "the transcript ends mid-record (the writer was stopped)" : undefined);
  return {
    ...base,
    startedMs: summary.startedMs ?? idStart(),
    status,
    turns: summary.turns,
    usage: summary.usage,
    costUsd: summary.model === undefined ? null : price(summary.model, summary.usage),
    partial: summary.partial,
    ...(summary.workspace === undefined ? {} : { workspace: summary.workspace }),
    ...(summary.task === undefined ? {} : { task: summary.task }),
    ...(summary.model === undefined ? {} : { model: summary.model }),
    ...(problem === undefined ? {} : { problem }),
  };
}

/** Prices usage per model, each model's prices looked up once; a bad HARNESS_PRICE_* gives no cost. */
function pricer(env: NodeJS.ProcessEnv): (model: string, usage: TokenUsage) => number | null {
  const cache = new Map<string, ReturnType<typeof resolvePricing> | null>();
  return (model, usage) => {
    if (!cache.has(model)) {
      try {
        cache.set(model, resolvePricing(model, env));
      } catch {
        cache.set(model, null);
      }
    }
    const pricing = cache.get(model);
    return pricing ? costUsd(pricing, usage) : null;
  };
}

function noUsage(): TokenUsage {
  return { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
}

/**
 * The run `query` names: `last` (the newest: latest start) or `last~N` (the Nth before it, as
 * `harness runs` lists them), its whole id, or the only one whose id starts or ends with it (a few
 * leading characters of the time, or the pid at its end). Throws `ConfigError` when none or several
 * match (naming a few, so the user can give more of the id).
 */
export function findRun<R extends { id: string }>(runs: readonly R[], query: string): R {
  const wanted = query.trim();
  if (wanted === "") throw new ConfigError("give a run id (harness runs lists them)");
  const exact = runs.find((run) => run.id === wanted);
  if (exact !== undefined) return exact;
  const back = /^last(?:~(\d+))?$/.exec(wanted);
  if (back !== null) return nthNewest(runs, Number(back[1] ?? 0), wanted);
  const matches = runs
    .filter((run) => run.id.startsWith(wanted) || run.id.endsWith(wanted))
    .sort((a, b) => (a.id < b.id ? 1 : -1));
  const only = matches[0];
  if (only !== undefined && matches.length === 1) return only;
  if (matches.length === 0)
    throw new ConfigError(
      `no run '${wanted}' (harness runs lists them; an id, a unique prefix or suffix of one, last or last~N)`,
    );
  const shown = matches.slice(0, 5).map((run) => run.id);
  const more = matches.length > shown.length ? `, and ${matches.length - shown.length} more` : "";
  throw new ConfigError(
    `'${wanted}' matches ${matches.length} runs: ${shown.join(", ")}${more}; give more of the id`,
  );
}

/** The run `back` places before the newest (by the start time in its id; ties by id). */
function nthNewest<R extends { id: string }>(runs: readonly R[], back: number, query: string): R {
  const newestFirst = [...runs].sort(
    (a, b) => (startOfRunId(b.id) ?? 0) - (startOfRunId(a.id) ?? 0) || (a.id < b.id ? 1 : -1),
  );
  const run = newestFirst[back];
  if (run !== undefined) return run;
  throw new ConfigError(
    runs.length === 0
      ? `no run '${query}': there are no runs yet`
      : `no run '${query}': there ${runs.length === 1 ? "is 1 run" : `are ${runs.length} runs`} (last~${runs.length - 1} is the oldest)`,
  );
}
