/**
 * Named ways a run can end, and the process exit code for each.
 * Anchor: mini-swe-agent `exceptions.py` (`Submitted`, `LimitsExceeded`, `FormatError`).
 */

/**
 * - `submitted`: the model replied without a tool call (its final answer).
 * - `step_limit`: `maxTurns` model calls were made.
 * - `cost_limit`: the token budget (`maxTotalTokens`) or the USD budget (`maxCostUsd`) of the run was used up.
 * - `format_errors`: the model kept hitting `max_tokens` (3 responses in a row) and could not make progress.
 * - `refusal`: the model stopped with `stop_reason: "refusal"`.
 * - `context_window`: the conversation no longer fits the model's context window.
 * - `canceled`: the user interrupted (Ctrl-C / aborted signal).
 * - `error`: the model API or the sandbox failed in a way retries did not cure.
 *
 * There is no `time_limit`: the loop has no wall-clock limit (each command has its own timeout).
 */
export type ExitStatus =
  | "submitted"
  | "step_limit"
  | "cost_limit"
  | "format_errors"
  | "refusal"
  | "context_window"
  | "canceled"
  | "error";

/**
 * The process exit code per status. 2 (usage or config error) is never a run's status: the CLI
 * returns it before a run starts.
 *
 * | code | meaning                                  | statuses                                   |
 * |------|------------------------------------------|--------------------------------------------|
 * | 0    | finished                                 | submitted                                  |
 * | 1    | error (model API, Docker)                | error                                      |
 * | 2    | usage / config error (CLI only)          | —                                          |
 * | 3    | turn or budget limit reached             | step_limit, cost_limit                     |
 * | 4    | the model refused or could not continue  | refusal, format_errors, context_window     |
 * | 130  | interrupted (128 + SIGINT, shell style)  | canceled                                   |
 */
export const EXIT_CODES: Readonly<Record<ExitStatus, number>> = Object.freeze({
  submitted: 0,
  error: 1,
  step_limit: 3,
  cost_limit: 3,
  refusal: 4,
  format_errors: 4,
  context_window: 4,
  canceled: 130,
});

/** The process exit code for a run that ended with `status`. */
export function exitCodeFor(status: ExitStatus): number {
  return EXIT_CODES[status];
}
