/**
 * The one object that says how a run ended, for programs: printed alone by `--output-format json` and
 * as the last line of `stream-json`. Its shape follows Claude Code's headless result
 * (`claude -p --output-format json`: type "result", subtype, is_error, result, num_turns, duration_ms,
 * duration_api_ms, total_cost_usd, usage, session_id) so the same scripts can read both; harness's own
 * fields sit beside them. Documented field by field in docs/output-formats.md.
 */

import type { ExitStatus } from "../agent/exit-status.js";
import { errorFacts } from "../errors.js";
import type { TokenUsage } from "../model/model-client.js";
import { costUsd, type ModelPricing } from "../model/pricing.js";
import type { EgressCounts } from "./egress-tally.js";

/**
 * Claude Code's subtypes where harness ends the same way; `error_max_total_tokens` is harness's own
 * (the `--max-total-tokens` budget); every other non-success ending is `error_during_execution`.
 */
export type ResultSubtype =
  | "success"
  | "error_max_turns"
  | "error_max_budget_usd"
  | "error_max_total_tokens"
  | "error_during_execution";

/** Token counts under the Messages API's names. */
export interface ApiUsage {
  /** Input tokens billed at the normal rate. */
  input_tokens: number;
  /** Output tokens. */
  output_tokens: number;
  /** Input tokens read from the prompt cache. */
  cache_read_input_tokens: number;
  /** Input tokens written to the prompt cache. */
  cache_creation_input_tokens: number;
}

/** Why a run failed, when it did. */
export interface ResultError {
  /** The error class: "ModelError", "SandboxError", "ConfigError", "HarnessError", … */
  name: string;
  /** One line for people. */
  message: string;
  /** HTTP status from the Messages API (ModelError). */
  status?: number;
  /** The API's request id (ModelError), for support tickets. */
  request_id?: string;
  /** The sandbox container involved (SandboxError). */
  container_id?: string;
}

/** The result object. */
export interface ResultMessage {
  /** Always "result". */
  type: "result";
  /** How the run ended, in Claude Code's words (see `ResultSubtype`). */
  subtype: ResultSubtype;
  /** True unless the model finished (`exit_code` 0). */
  is_error: boolean;
  /** How the run ended, in harness's words (the `ExitStatus`), e.g. "submitted", "refusal", "canceled". */
  status: ExitStatus;
  /** The process exit code harness ends with (README, "Exit codes"). */
  exit_code: number;
  /** The text of the model's last response; its summary when `status` is "submitted". */
  result: string;
  /** Model calls made. */
  num_turns: number;
  /** Wall-clock time of the whole command, sandbox start-up included, in ms. */
  duration_ms: number;
  /** Time spent waiting for the Messages API (retries included), in ms. */
  duration_api_ms: number;
  /** Tokens summed over the run. */
  usage: ApiUsage;
  /** Estimated cost in USD; null when no price is known for the model (see `HARNESS_PRICE_*`). */
  total_cost_usd: number | null;
  /** The model id harness asked for. */
  model: string;
  /** The run's id; the same value as `run_id`, under Claude Code's name. */
  session_id: string;
  /** The run's id (also the default transcript's file name). */
  run_id: string;
  /** The JSONL transcript; null when the run failed before one was started. */
  transcript_path: string | null;
  /** Allowlist mode's connection counts; only in allowlist mode. */
  egress?: EgressCounts;
  /** Why the run failed, when it failed with an error. */
  error?: ResultError;
}

/** What the summary needs besides the run's own result. */
export interface RunFacts {
  /** The model id harness asks for. */
  model: string;
  /** The run's id. */
  runId: string;
  /** Prices for `model`; undefined makes `total_cost_usd` null. */
  pricing: ModelPricing | undefined;
  /** The USD budget, if any: tells "error_max_budget_usd" from "error_max_total_tokens". */
  maxBudgetUsd: number | undefined;
}

/** How a run ended, or how the command failed before a run. */
export interface Ending {
  /** The run's status ("error" for a failure before the run). */
  status: ExitStatus;
  /** The exit code the process ends with. */
  exitCode: number;
  /** Model calls made. */
  turns: number;
  /** Tokens summed over the run. */
  usage: TokenUsage;
  /** The model's last text. */
  finalText: string;
  /** The failure, if there was one. */
  error?: unknown;
  /** Wall-clock time so far, in ms. */
  durationMs: number;
  /** Time spent in model calls, in ms. */
  apiDurationMs: number;
  /** The transcript file, or null when none was started. */
  transcriptPath: string | null;
  /** Allowlist mode's counts, when the sandbox has a gateway. */
  egress?: EgressCounts | undefined;
}

/** The result object for a run that ended (or a command that failed before its run). */
export function buildResult(facts: RunFacts, ending: Ending): ResultMessage {
  const cost = facts.pricing === undefined ? null : costUsd(facts.pricing, ending.usage);
  const message: ResultMessage = {
    type: "result",
    subtype: subtypeFor(ending.status, cost, facts.maxBudgetUsd),
    is_error: ending.exitCode !== 0,
    status: ending.status,
    exit_code: ending.exitCode,
    result: ending.finalText,
    num_turns: ending.turns,
    duration_ms: Math.round(ending.durationMs),
    duration_api_ms: Math.round(ending.apiDurationMs),
    usage: apiUsage(ending.usage),
    total_cost_usd: cost,
    model: facts.model,
    session_id: facts.runId,
    run_id: facts.runId,
    transcript_path: ending.transcriptPath,
  };
  if (ending.egress !== undefined) message.egress = ending.egress;
  if (ending.error !== undefined) message.error = errorFields(ending.error);
  return message;
}

/** "cost_limit" covers both budgets; which one stopped the run is the one that was reached. */
function subtypeFor(
  status: ExitStatus,
  cost: number | null,
  maxBudgetUsd: number | undefined,
): ResultSubtype {
  switch (status) {
    case "submitted":
      return "success";
    case "step_limit":
      return "error_max_turns";
    case "cost_limit":
      return maxBudgetUsd !== undefined && cost !== null && cost >= maxBudgetUsd
        ? "error_max_budget_usd"
        : "error_max_total_tokens";
    default:
      return "error_during_execution";
  }
}

export function apiUsage(usage: Readonly<TokenUsage>): ApiUsage {
  return {
    input_tokens: usage.inputTokens,
    output_tokens: usage.outputTokens,
    cache_read_input_tokens: usage.cacheReadInputTokens,
    cache_creation_input_tokens: usage.cacheCreationInputTokens,
  };
}

function errorFields(error: unknown): ResultError {
  const { name, message, status, requestID, containerId } = errorFacts(error);
  return {
    name,
    message: message.split("\n")[0] ?? "",
    ...(status === undefined ? {} : { status }),
    ...(requestID === undefined ? {} : { request_id: requestID }),
    ...(containerId === undefined ? {} : { container_id: containerId }),
  };
}
