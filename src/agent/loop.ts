/**
 * The agent loop: ask the model, run the tools it asks for, send the results back, until it answers
 * without a tool call or a limit ends the run. Every stop reason is handled on purpose, and the message
 * list is a valid conversation for the next request whatever happens (a REPL continues from it).
 */
import type { ModelResponse } from "../model/model-client.js";
import type { AgentDeps, AgentRunResult, RunContext, RunEnd, RunState } from "./agent-types.js";
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
import { addUsage, totalTokens, ZERO_USAGE } from "./usage.js";

export type { AgentDeps, AgentLimits, AgentRunResult, StepCheckpoints } from "./agent-types.js";
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
  const { deps, events, state } = ctx;
  const { limits } = deps;
  for (;;) {
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
    state.turns += 1;
    let response: ModelResponse;
    try {
      response = await deps.model.complete(
        {
          system: deps.system,
          messages: [...state.messages],
          tools: deps.tools.map((tool) => tool.definition),
          maxTokens: limits.maxTokens,
          ...(deps.signal === undefined ? {} : { signal: deps.signal }),
        },
        { onText: events.onText },
      );
    } catch (error) {
      return modelFailure(error, deps.signal);
    }
    // The last step's snapshot ran while the model answered; its record comes before the response's.
    await deps.checkpoints?.settle().catch(() => undefined);
    state.usage = addUsage(state.usage, response.usage);
    state.finalText = textOf(response.content);
    events.onTurnUsage(response.usage, state.usage);
    events.onAssistantTurn(response);
    appendAssistant(state.messages, response.content);
    const end = await afterResponse(ctx, response);
    if (end !== undefined) return end;
  }
}
