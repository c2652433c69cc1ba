/**
 * Named ways a run can end. What each means for the process exit code is the CLI's business
 * (src/cli/exit-codes.ts).
 */

/**
 * - `submitted`: the model replied without a tool call (its final answer).
 * - `step_limit`: `maxTurns` model calls were made.
 * - `cost_limit`: the token budget (`maxTotalTokens`) or the USD budget (`maxCostUsd`) of the run was
 *   used up.
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
