/**
 * The agent loop: ask the model, run the tools it asks for, send the results back, until it answers
 * without a tool call or a limit ends the run. Every stop reason is handled on purpose, and the message
 * list is a valid conversation for the next request whatever happens (a REPL continues from it).
 */
import type { ModelResponse } from "../model/model-client.js";
import { addUsage, totalTokens, ZERO_USAGE } from "../model/usage.js";
import type { AgentDeps, AgentRunResult, RunContext, RunEnd, RunState } from "./agent-types.js";
import {
  afterContextResponse,
  createContextState,
  type FittedRequest,
  fitContext,
  retryAfterRefusal,
} from "./context/context-manager.js";
import {
  appendAssistant,
  appendUserBlocks,
  appendUserText,
  textOf,
  toolResultBlock,
  unansweredToolUses,
} from "./conversation.js";
import { guardEvents } from "./events.js";
import { asHarnessError, modelFailure } from "./model-failure.js";
import { afterResponse } from "./stop-reasons.js";
import { runToolCalls } from "./tool-turn.js";

export type { AgentDeps, AgentLimits, AgentRunResult, StepCheckpoints } from "./agent-types.js";
export type { ContextOptions, ContextStrategy } from "./context/context-manager.js";
export type { AgentEvents } from "./events.js";
export { MAX_TOKENS_STREAK_LIMIT } from "./stop-reasons.js";

/** Runs one task to the end. Contract: never rejects; failures are a status (and `error`). */
export async function runAgent(task: string, deps: AgentDeps): Promise<AgentRunResult> {
  const events = guardEvents(deps.events);
  const state: RunState = {
    messages: [...(deps.history ?? [])],
    turns: 0,
    usage: { ...ZERO_USAGE },
    maxTokensStreak: 0,
    finalText: "",
  };
  const ctx: RunContext = { deps, events, state };
  state.context = createContextState(ctx);
  events.onRunStart({
    task,
    system: deps.system,
    tools: deps.tools.map((tool) => tool.definition.name),
    limits: deps.limits,
  });
  appendUserText(state.messages, task);
  events.onUserMessage(task);
  await deps.checkpoints?.start().catch(() => undefined);

  let end: RunEnd;
  try {
    end = await loop(ctx);
  } catch (error) {
    // Only a bug gets here (every dependency's failures are handled); still end as a status.
    end = { status: "error", error: asHarnessError(error, "The agent loop failed") };
  }
  // Whatever ended the run, leave no tool_use unanswered: the next request would be rejected.
  const open = unansweredToolUses(state.messages);
  if (open.length > 0) {
    const outcome = await runToolCalls(open, {
      tools: deps.tools,
      events,
      skipAll: `Error: not run: the run ended (${end.status}) before this tool call could run.`,
      checkpoints: deps.checkpoints,
    });
    appendUserBlocks(state.messages, outcome.results.map(toolResultBlock));
  }
  await deps.checkpoints?.settle().catch(() => undefined);
  const result: AgentRunResult = {
    status: end.status,
    messages: state.messages,
    turns: state.turns,
    usage: state.usage,
    finalText: state.finalText,
  };
  if (end.error !== undefined) result.error = end.error;
  events.onRunEnd(result);
  return result;
}

async function loop(ctx: RunContext): Promise<RunEnd> {
  for (;;) {
    const limit = limitReached(ctx);
    if (limit !== undefined) return limit;
    const response = await ask(ctx);
    if ("status" in response) {
      if (response.status === "retry") continue;
      return response;
    }
    const end = await afterResponse(ctx, response);
    if (end !== undefined) return end;
  }
}

/** A limit that ends the run before the next model call, if one is reached. */
function limitReached(ctx: RunContext): RunEnd | undefined {
  const { deps, events, state } = ctx;
  const { limits } = deps;
  if (deps.signal?.aborted) return { status: "canceled" };
  if (state.turns >= limits.maxTurns) {
    events.onNotice(`Stopped: reached the turn limit (${limits.maxTurns} model calls).`);
    return { status: "step_limit" };
  }
  const spent = totalTokens(state.usage);
  if (limits.maxTotalTokens !== undefined && spent >= limits.maxTotalTokens) {
    events.onNotice(`Stopped: token budget used up (${spent} of ${limits.maxTotalTokens} tokens).`);
    return { status: "cost_limit" };
  }
  const cost = limits.costOf?.(state.usage);
  if (limits.maxCostUsd !== undefined && cost !== undefined && cost >= limits.maxCostUsd) {
    events.onNotice(
      `Stopped: cost budget used up (about $${Number(cost.toPrecision(3))} of $${limits.maxCostUsd}).`,
    );
    return { status: "cost_limit" };
  }
  return undefined;
}

/**
 * One model call, on a conversation made to fit the context window; the response appended and
 * recorded. A request the API refused for its size after all is fitted again and retried once.
 */
async function ask(ctx: RunContext): Promise<ModelResponse | RunEnd | { status: "retry" }> {
  const { deps, events, state } = ctx;
  let fitted: FittedRequest | RunEnd;
  try {
    fitted = await fitContext(ctx);
  } catch (error) {
    return modelFailure(error, deps.signal);
  }
  if ("status" in fitted) return fitted;
  state.turns += 1;
  const sent = [...state.messages];
  let response: ModelResponse;
  try {
    response = await deps.model.complete(
      {
        system: deps.system,
        messages: sent,
        tools: deps.tools.map((tool) => tool.definition),
        maxTokens: deps.limits.maxTokens,
        ...(deps.signal === undefined ? {} : { signal: deps.signal }),
        ...(deps.thinking === undefined ? {} : { thinking: deps.thinking }),
        ...(deps.effort === undefined ? {} : { effort: deps.effort }),
        ...fitted,
      },
      { onText: events.onText, onThinking: events.onThinking },
    );
  } catch (error) {
    if (!retryAfterRefusal(ctx, sent, error)) return modelFailure(error, deps.signal);
    state.turns -= 1;
    return { status: "retry" };
  }
  // The last step's snapshot ran while the model answered; its record comes before the response's.
  await deps.checkpoints?.settle().catch(() => undefined);
  state.usage = addUsage(state.usage, response.usage);
  state.finalText = textOf(response.content);
  events.onTurnUsage(response.usage, state.usage);
  events.onAssistantTurn(response);
  appendAssistant(state.messages, response.content);
  afterContextResponse(ctx, sent, response);
  return response;
}
