/**
 * What the loop does with each stop reason. `undefined` means "ask the model again".
 * The reasons are the API's (`StopReason` in the SDK).
 */
import { HarnessError } from "../errors.js";
import type { ModelResponse } from "../model/model-client.js";
import type { RunContext, RunEnd } from "./agent-types.js";
import { appendUserBlocks, appendUserText, toolResultBlock, toolUses } from "./conversation.js";
import { runToolCalls } from "./tool-turn.js";

/** `max_tokens` responses in a row after which the run ends with "format_errors". */
export const MAX_TOKENS_STREAK_LIMIT = 3;

/** What to do with each stop reason; `undefined` means ask the model again. */
export async function afterResponse(ctx: RunContext, response: ModelResponse): Promise<RunEnd | undefined> {
  const { events, state } = ctx;
  const hasToolUse = toolUses(response.content).length > 0;
  const reason = response.stopReason;
  if (reason !== "max_tokens") state.maxTokensStreak = 0;
  switch (reason) {
    case "end_turn":
    case "stop_sequence":
      // A tool_use here would be unusual, but if the model asked for something, answer it and go on.
      return hasToolUse ? runTools(ctx, response) : { status: "submitted" };
    case "tool_use":
      return runTools(ctx, response);
    case "pause_turn":
      // A server-side tool paused a long turn: send the conversation back as is and the API continues it.
      return hasToolUse ? runTools(ctx, response) : undefined;
    case "compaction":
      // The API compacted and paused (pause_after_compaction): the next request goes on from the block.
      return undefined;
    case "max_tokens":
      return onMaxTokens(ctx, response);
    case "refusal":
      events.onNotice("The model declined to continue (stop reason: refusal).");
      return { status: "refusal" };
    case "model_context_window_exceeded":
      events.onNotice("The conversation no longer fits the model's context window.");
      return { status: "context_window" };
    default:
      return {
        status: "error",
        error: new HarnessError(
          `The model's response ended with an unexpected stop reason: ${String(reason)}`,
        ),
      };
  }
}

async function runTools(
  ctx: RunContext,
  response: ModelResponse,
  skip?: Map<string, string>,
): Promise<RunEnd | undefined> {
  const { deps, events, state } = ctx;
  const calls = toolUses(response.content).map(({ id, name, input }) => ({ id, name, input }));
  const outcome = await runToolCalls(calls, {
    tools: deps.tools,
    events,
    signal: deps.signal,
    ...(skip === undefined ? {} : { skip }),
    checkpoints: deps.checkpoints,
  });
  appendUserBlocks(state.messages, outcome.results.map(toolResultBlock));
  if (outcome.fatal !== undefined) return { status: "error", error: outcome.fatal };
  if (outcome.canceled) return { status: "canceled" };
  return undefined;
}

/**
 * The response was cut off. A trailing tool_use was being written when the budget ran out, so its input
 * may be truncated (a cut command can still parse, and running half a command is worse than running
 * none): answer it with an error instead of running it. Complete calls before it run normally.
 */
async function onMaxTokens(ctx: RunContext, response: ModelResponse): Promise<RunEnd | undefined> {
  const { deps, events, state } = ctx;
  const limit = deps.limits.maxTokens;
  state.maxTokensStreak += 1;
  if (state.maxTokensStreak >= MAX_TOKENS_STREAK_LIMIT) {
    events.onNotice(
      `Stopped: ${MAX_TOKENS_STREAK_LIMIT} responses in a row were cut off at max_tokens (${limit}).`,
    );
    return { status: "format_errors" };
  }
  const last = response.content.at(-1);
  const cutId = last?.type === "tool_use" ? last.id : undefined;
  if (toolUses(response.content).length > 0) {
    const skip = new Map<string, string>();
    if (cutId !== undefined) {
      skip.set(
        cutId,
        `Error: this tool call was cut off at max_tokens (${limit} output tokens) and was not run.`,
      );
    }
    const end = await runTools(ctx, response, skip);
    if (end !== undefined) return end;
  }
  const nudge =
    `Your last response was cut off at the max_tokens limit (${limit} output tokens)` +
    `${cutId === undefined ? "" : " and its last tool call was not run"}. ` +
    "Continue in smaller steps: one command at a time, shorter messages, and write big files in several parts.";
  events.onNotice(
    `Response cut off at max_tokens (${limit}); asking the model to continue in smaller steps.`,
  );
  appendUserText(state.messages, nudge);
  events.onUserMessage(nudge);
  return undefined;
}
