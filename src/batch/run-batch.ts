/**
 * A batch from its planned tasks to its results: which tasks run (resume), running them through the
 * pool, appending each result as it ends, and the summary. How one task runs is injected (`runOne`,
 * cli/run/run-task.ts in production), so this file knows nothing of Docker or the API.
 */
import type { BatchProgress } from "./batch-progress.js";
import { type BatchSummary, summarize } from "./batch-summary.js";
import { type BatchResult, needsRun, type ResultsWriter, type RetryMode } from "./results-file.js";
import type { PlannedTask } from "./task-plan.js";
import { runPool } from "./task-pool.js";
import { type Discard, WarmAhead } from "./warm-ahead.js";

export interface BatchRunOptions {
  /** Every task of the tasks file, in order. */
  planned: readonly PlannedTask[];
  /** Results already in the results file (last per id). */
  recorded: ReadonlyMap<string, BatchResult>;
  /** Which recorded results run again. */
  retry: RetryMode;
  /** Most tasks at once. */
  concurrency: number;
  /** Ctrl-C / SIGTERM: stop starting, and end the running tasks (they get this signal). */
  signal: AbortSignal;
  /** Stop starting tasks once `spentUsd()` reaches this. */
  maxBudgetUsd?: number | undefined;
  /** USD spent so far by this command, running tasks included. */
  spentUsd: () => number;
  /** Where each result goes as it ends. */
  writer: Pick<ResultsWriter, "append">;
  progress: BatchProgress;
  /**
   * Runs one task to its result. `warmed` resolves once the task's sandbox, if the warm pool made it
   * ahead, is ready, with how to discard it should the task fail before its sandbox took it over; the
   * task waits for it before opening its sandbox (that wait is part of its sandbox start).
   * Contract: resolves with a result for any failure of the task.
   */
  runOne: (
    planned: PlannedTask,
    signal: AbortSignal,
    warmed: Promise<Discard | undefined>,
  ) => Promise<BatchResult>;
  /**
   * The warm pool (warm-ahead.ts): makes a task's sandbox ahead of its start, at most `size` waiting
   * at once. Undefined or size 0: every task makes its own when it starts.
   */
  warm?: { size: number; warm: (planned: PlannedTask) => Promise<Discard | undefined> } | undefined;
  /** Makes a result for a task whose `runOne` rejected anyway (a bug), so it is still recorded. */
  crashResult: (planned: PlannedTask, error: unknown) => BatchResult;
  /** Times a 429/529 paused every task. */
  rateLimitPauses: () => number;
  /** Milliseconds clock, for tests. */
  now?: () => number;
}

export interface BatchOutcome {
  summary: BatchSummary;
  /** Last result per task id, earlier runs' included. */
  results: Map<string, BatchResult>;
  /** Tasks this command started. */
  started: number;
  /** Tasks skipped because a result was recorded. */
  skipped: number;
}

export async function runBatch(options: BatchRunOptions): Promise<BatchOutcome> {
  const now = options.now ?? (() => performance.now());
  const startedAt = now();
  const results = new Map(options.recorded);
  const toRun = options.planned.filter((p) => needsRun(options.recorded.get(p.task.id), options.retry));
  const record = (result: BatchResult) => {
    results.set(result.task_id, result);
    options.writer.append(result);
    options.progress.finished(result);
  };
  const { maxBudgetUsd } = options;
  const warm = options.warm;
  const ahead = warm
    ? new WarmAhead({ items: toRun, concurrency: options.concurrency, size: warm.size, warm: warm.warm })
    : undefined;
  ahead?.fill();
  const pool = await runPool({
    items: toRun,
    concurrency: options.concurrency,
    signal: options.signal,
    mayStart: maxBudgetUsd === undefined ? undefined : () => options.spentUsd() < maxBudgetUsd,
    run: async (planned) => {
      options.progress.started(planned.task.id);
      const warmed = ahead?.take(planned) ?? Promise.resolve(undefined);
      record(await options.runOne(planned, options.signal, warmed));
    },
    onCrash: (planned, error) => record(options.crashResult(planned, error)),
  }).finally(() => ahead?.close());
  const stoppedBy =
    pool.stoppedBy === "signal" || options.signal.aborted
      ? "interrupt"
      : pool.stoppedBy === "budget"
        ? "budget"
        : null;
  const summary = summarize({
    taskIds: options.planned.map((p) => p.task.id),
    results,
    durationMs: now() - startedAt,
    rateLimitPauses: options.rateLimitPauses(),
    stoppedBy,
  });
  return { summary, results, started: pool.started, skipped: options.planned.length - toRun.length };
}
