/**
 * The end of a batch: how many tasks passed, why the others failed, what it cost, how long tasks
 * took (p50/p95), and the batch's exit code. Printed as lines for people, or as one JSON object
 * (`--output-format json`).
 */
import { type ApiUsage, apiUsage } from "../output/result-summary.js";
import { formatDuration } from "../text/units.js";
import type { BatchResult } from "./results-file.js";

/** Exit codes of `harness batch`, in the table of src/cli/exit-codes.ts (README "Exit codes"). */
export const BATCH_EXIT = {
  /** Every task finished: each has a result that is not an error (passed or not). */
  ok: 0,
  /** Every task ran, but at least one ended with an error (Docker, the API after retries): `--retry errors`. */
  error: 1,
  /** The batch's `--max-budget-usd` stopped it before every task ran. */
  limit: 3,
  /** Ctrl-C or SIGTERM: the tasks not finished run when the same command is given again. */
  interrupted: 130,
} as const;

/** Milliseconds at the 50th and 95th percentiles (nearest rank), and the longest; null when empty. */
export interface Percentiles {
  p50: number | null;
  p95: number | null;
  max: number | null;
}

export interface BatchSummary {
  /** Always "batch_summary". */
  type: "batch_summary";
  /** Tasks in the tasks file. */
  tasks: number;
  /** Tasks with a result (this run's or an earlier one's). */
  finished: number;
  /** Results with subtype "success". */
  passed: number;
  /** Results that are not a success. */
  failed: number;
  /** Failed results per reason: the status, with the error class for "error" (e.g. "error:ModelError"). */
  failed_by_reason: Record<string, number>;
  /** Tasks without a result: never started (budget, interrupt). */
  not_run: number;
  /** Estimated USD summed over results; null when any result has no price. */
  total_cost_usd: number | null;
  /** Tokens summed over results. */
  usage: ApiUsage;
  /** Wall-clock time of this batch command, in ms. */
  duration_ms: number;
  /** Per-task wall-clock time (`duration_ms` of results). */
  task_duration_ms: Percentiles;
  /** Sandbox start time per task (`sandbox_start_ms` of results). */
  sandbox_start_ms: Percentiles;
  /** Times a 429 or 529 paused every task (this command). */
  rate_limit_pauses: number;
  /** Why the batch stopped early, if it did. */
  stopped_by: "interrupt" | "budget" | null;
  /** The process exit code (BATCH_EXIT). */
  exit_code: number;
}

export interface SummaryInput {
  /** Task ids in file order. */
  taskIds: readonly string[];
  /** Last result per task id. */
  results: ReadonlyMap<string, BatchResult>;
  /** Wall-clock time of this command, in ms. */
  durationMs: number;
  rateLimitPauses: number;
  stoppedBy: "interrupt" | "budget" | null;
}

export function summarize(input: SummaryInput): BatchSummary {
  const results = input.taskIds.flatMap((id) => {
    const result = input.results.get(id);
    return result === undefined ? [] : [result];
  });
  const failedByReason: Record<string, number> = {};
  let cost: number | null = 0;
  const usage = apiUsage({
    inputTokens: 0,
    outputTokens: 0,
    cacheReadInputTokens: 0,
    cacheCreationInputTokens: 0,
  });
  for (const r of results) {
    if (r.subtype !== "success") {
      const reason = r.status === "error" && r.error ? `error:${r.error.name}` : r.status;
      failedByReason[reason] = (failedByReason[reason] ?? 0) + 1;
    }
    cost = cost === null || r.total_cost_usd === null ? null : cost + r.total_cost_usd;
    usage.input_tokens += r.usage.input_tokens;
    usage.output_tokens += r.usage.output_tokens;
    usage.cache_read_input_tokens += r.usage.cache_read_input_tokens;
    usage.cache_creation_input_tokens += r.usage.cache_creation_input_tokens;
  }
  const passed = results.filter((r) => r.subtype === "success").length;
  const notRun = input.taskIds.length - results.length;
  const unfinished = results.some((r) => r.status === "canceled");
  const exitCode =
    input.stoppedBy === "interrupt" || unfinished
      ? BATCH_EXIT.interrupted
      : notRun > 0
        ? BATCH_EXIT.limit
        : results.some((r) => r.status === "error")
          ? BATCH_EXIT.error
          : BATCH_EXIT.ok;
  return {
    type: "batch_summary",
    tasks: input.taskIds.length,
    finished: results.length,
    passed,
    failed: results.length - passed,
    failed_by_reason: failedByReason,
    not_run: notRun,
    total_cost_usd: cost,
    usage,
    duration_ms: Math.round(input.durationMs),
    task_duration_ms: percentiles(results.map((r) => r.duration_ms)),
    sandbox_start_ms: percentiles(
      results.flatMap((r) => (r.sandbox_start_ms === null ? [] : [r.sandbox_start_ms])),
    ),
    rate_limit_pauses: input.rateLimitPauses,
    stopped_by: input.stoppedBy,
    exit_code: exitCode,
  };
}

/** Nearest-rank percentiles. */
export function percentiles(values: readonly number[]): Percentiles {
  if (values.length === 0) return { p50: null, p95: null, max: null };
  const sorted = [...values].sort((a, b) => a - b);
  const rank = (p: number) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? null;
  return { p50: rank(50), p95: rank(95), max: sorted.at(-1) ?? null };
}

export function formatCost(usd: number | null): string {
  return usd === null ? "cost unknown" : `$${usd < 0.01 ? usd.toFixed(6) : usd.toFixed(4)}`;
}

/** The summary as lines for people. */
export function formatSummary(s: BatchSummary, paths: { results: string; transcripts: string }): string {
  const reasons = Object.entries(s.failed_by_reason)
    .sort(([, a], [, b]) => b - a)
    .map(([reason, n]) => `${n} ${reason}`)
    .join(", ");
  const stopped =
    s.stopped_by === "interrupt"
      ? " · interrupted: run the same command again to finish"
      : s.stopped_by === "budget"
        ? " · stopped by --max-budget-usd"
        : "";
  const tokens = `${s.usage.input_tokens + s.usage.cache_read_input_tokens + s.usage.cache_creation_input_tokens} in / ${s.usage.output_tokens} out`;
  return [
    `batch: ${s.tasks} tasks · ${s.passed} passed · ${s.failed} failed${reasons ? ` (${reasons})` : ""} · ${s.not_run} not run${stopped}`,
    `cost ≈ ${formatCost(s.total_cost_usd)} · tokens ${tokens} · wall ${formatDuration(s.duration_ms)} · per task p50 ${formatDuration(s.task_duration_ms.p50)} p95 ${formatDuration(s.task_duration_ms.p95)} · sandbox start p50 ${formatDuration(s.sandbox_start_ms.p50)} p95 ${formatDuration(s.sandbox_start_ms.p95)} · rate-limit pauses ${s.rate_limit_pauses}`,
    `results: ${paths.results} · transcripts: ${paths.transcripts} · exit ${s.exit_code}`,
  ]
    .map((line) => `${line}\n`)
    .join("");
}
