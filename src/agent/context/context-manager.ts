/**
 * Keeps every request within the model's context window, so a task longer than the window goes on:
 * - "server": the API compacts (`compact_20260112`), triggered early enough that the turn after the
 *   trigger still fits (its growth is bounded by `max_tokens` and the tool results); harness keeps
 *   the compaction block and sends it back verbatim, dropping what it stands for;
 * - "client": harness clears old tool results first (keeping the last few whole, each cleared one
 *   pointing at its saved text for read_output), and summarizes the conversation when that is not
 *   enough;
 * - "off": nothing; a request over the window is refused by the API and the run ends.
 * Either way, a turn that would not fit is shrunk before it is sent (its results cleared too), and a
 * turn that cannot fit even alone ends the run with `context_window`.
 */
import type { MessageParam, ModelResponse } from "../../model/model-client.js";
import { addUsage } from "../../model/usage.js";
import type { RunContext, RunEnd } from "../agent-types.js";
import {
  applyClearedResults,
  applySummary,
  type ClearedResult,
  clearedPlaceholder,
  dropBeforeCompaction,
  toolResultTexts,
} from "./context-edits.js";
import { ContextMeter } from "./context-meter.js";
import { summarize } from "./summarize.js";
import { preambleTokens, textTokens } from "./token-estimate.js";

export type ContextStrategy = "server" | "client" | "off";

/** How the loop manages the context window (`AgentDeps.context`). */
export interface ContextOptions {
  /** Most input tokens one request may hold. */
  window: number;
  strategy: ContextStrategy;
  /** Saves a cleared tool result's text where read_output finds it; its id, or undefined when not saved. */
  saveCleared?: (text: string) => string | undefined;
  /** Tool results kept whole when older ones are cleared (default 3). */
  keepToolResults?: number;
}

/** The thresholds, in tokens. */
export interface ContextLimits {
  /** Most input a request is sent with: the window less `max_tokens` and a margin. */
  budget: number;
  /** Where compaction (server) or clearing (client) starts: one turn's growth below `budget`. */
  highWater: number;
  /** Where clearing stops. */
  lowWater: number;
}

/** The server's smallest compaction trigger. */
export const MIN_COMPACTION_TRIGGER = 50_000;
/** What one turn's tool results may add, besides the response itself (two cut outputs). */
const TOOL_RESULTS_GROWTH = 12_000;
/** A result shorter than this is not worth clearing. */
const MIN_CLEARED_CHARS = 500;

export function contextLimits(window: number, maxTokens: number): ContextLimits {
  const budget = window - maxTokens - Math.max(1_024, Math.ceil(window * 0.03));
  const growth = Math.min(maxTokens + TOOL_RESULTS_GROWTH, Math.floor(budget / 3));
  const highWater = budget - growth;
  return { budget, highWater, lowWater: Math.min(highWater, Math.floor(budget / 2)) };
}

/**
 * The strategy that can work: server compaction needs the model's support and a window whose
 * trigger can be the API's smallest or more.
 */
export function chooseStrategy(
  wanted: "auto" | ContextStrategy,
  serverCompaction: boolean,
  window: number,
  maxTokens: number,
): ContextStrategy {
  if (wanted === "off" || wanted === "client") return wanted;
  const fits = contextLimits(window, maxTokens).highWater >= MIN_COMPACTION_TRIGGER;
  if (serverCompaction && fits) return "server";
  return "client";
}

/** Per-run state of the context manager. */
export interface ContextState {
  options: ContextOptions;
  limits: ContextLimits;
  meter: ContextMeter;
  /** A refusal for size was retried once already in this turn. */
  retried: boolean;
}

export function createContextState(ctx: Pick<RunContext, "deps">): ContextState | undefined {
  const { deps } = ctx;
  const options = deps.context;
  if (options === undefined || options.strategy === "off") return undefined;
  const preamble = preambleTokens(
    deps.system,
    deps.tools.map((tool) => tool.definition),
  );
  return {
    options,
    limits: contextLimits(options.window, deps.limits.maxTokens),
    meter: new ContextMeter(preamble),
    retried: false,
  };
}

/** What the request gets from the context manager. */
export interface FittedRequest {
  compactAtTokens?: number;
}

/**
 * Before a model call: the conversation made to fit, or the run's end when it cannot. Rejects as
 * `ModelClient.complete` does when a summary was asked for and failed.
 */
export async function fitContext(ctx: RunContext): Promise<FittedRequest | RunEnd> {
  const context = ctx.state.context;
  if (context === undefined) return {};
  const { limits, options } = context;
  const server = options.strategy === "server";
  const request: FittedRequest = server ? { compactAtTokens: limits.highWater } : {};
  // The server compacts past the trigger by itself: harness steps in only when the request would not fit.
  const threshold = server ? limits.budget : limits.highWater;
  let estimate = context.meter.estimate(ctx.state.messages);
  if (estimate <= threshold) return request;
  estimate = clearResults(
    ctx,
    context,
    server ? limits.highWater : limits.lowWater,
    options.keepToolResults ?? 3,
  );
  if (estimate <= threshold) return request;
  if (!server) {
    estimate = await summarizeConversation(ctx, context, estimate);
    if (estimate <= limits.budget) return request;
  }
  // Last: the newest results too, each still readable by its id.
  estimate = clearResults(ctx, context, limits.budget, 0);
  if (estimate <= limits.budget) return request;
  ctx.events.onNotice(
    `Stopped: the conversation's last turn alone (about ${estimate.toLocaleString("en-US")} tokens) does not fit the model's context window (${options.window.toLocaleString("en-US")} tokens, ${ctx.deps.limits.maxTokens.toLocaleString("en-US")} of them kept for the answer).`,
  );
  return { status: "context_window" };
}

/** Clears the oldest results (all but the last `keep`) until the estimate is at most `target`. */
function clearResults(ctx: RunContext, context: ContextState, target: number, keep: number): number {
  const { state, events } = ctx;
  const before = context.meter.estimate(state.messages);
  const results = toolResultTexts(state.messages);
  const candidates = results.slice(0, Math.max(0, results.length - keep));
  const cleared: ClearedResult[] = [];
  let estimate = before;
  for (const result of candidates) {
    if (estimate <= target) break;
    if (result.text.length < MIN_CLEARED_CHARS) continue;
    const placeholder = clearedPlaceholder(context.options.saveCleared?.(result.text), result.text);
    cleared.push({ toolUseId: result.toolUseId, placeholder });
    estimate -= Math.floor((textTokens(result.text) - textTokens(placeholder)) * context.meter.ratio);
  }
  if (cleared.length === 0) return before;
  applyClearedResults(state.messages, cleared);
  context.meter.edited();
  const after = context.meter.estimate(state.messages);
  events.onContextEdit({ kind: "clear_tool_results", cleared, tokensBefore: before, tokensAfter: after });
  return after;
}

/** Replaces everything before the last assistant turn with the model's summary of it. */
async function summarizeConversation(
  ctx: RunContext,
  context: ContextState,
  before: number,
): Promise<number> {
  const { deps, state, events } = ctx;
  const last = state.messages.findLastIndex((message) => message.role === "assistant");
  // Nothing before the last turn but the task: a summary of it would save nothing.
  if (last < 2) return before;
  const summary = await summarize(deps.model, state.messages.slice(0, last), {
    window: context.options.window,
    maxTokens: deps.limits.maxTokens,
    signal: deps.signal,
  });
  state.usage = addUsage(state.usage, summary.usage);
  events.onTurnUsage(summary.usage, state.usage);
  const keptMessages = state.messages.length - last;
  state.messages.splice(
    0,
    state.messages.length,
    ...applySummary(state.messages, summary.summary, keptMessages),
  );
  context.meter.edited();
  const after = context.meter.estimate(state.messages);
  events.onContextEdit({
    kind: "summary",
    summary: summary.summary,
    keptMessages,
    tokensBefore: before,
    tokensAfter: after,
    usage: summary.usage,
  });
  return after;
}

/**
 * After a response was appended: a compaction block drops what it stands for, and the meter learns
 * what the request held. `sent`: the messages the request carried.
 */
export function afterContextResponse(
  ctx: RunContext,
  sent: readonly MessageParam[],
  response: ModelResponse,
): void {
  const { state, events } = ctx;
  const compacted = response.content.some((block) => block.type === "compaction" && block.content != null);
  if (compacted) {
    const droppedMessages = dropBeforeCompaction(state.messages);
    events.onContextEdit({
      kind: "compaction",
      by: "server",
      droppedMessages,
      contextTokens: response.contextTokens ?? 0,
      ...(response.compactionUsage === undefined ? {} : { usage: response.compactionUsage }),
    });
  }
  if (state.context !== undefined) {
    state.context.meter.observe(sent, response, state.messages);
    state.context.retried = false;
  }
}

const TOO_LONG = /prompt is too long: (\d+) tokens > \d+ maximum|exceed context limit: (\d+) \+ \d+ > \d+/;

/**
 * The API refused the request for its size after all (the estimate was too low): learn its count and
 * ask again once, after fitting the conversation with what was learned. True when the loop should.
 */
export function retryAfterRefusal(ctx: RunContext, sent: readonly MessageParam[], error: unknown): boolean {
  const context = ctx.state.context;
  if (context === undefined || context.retried || !(error instanceof Error)) return false;
  const match = TOO_LONG.exec(error.message);
  const tokens = Number(match?.[1] ?? match?.[2]);
  if (!(tokens > 0)) return false;
  context.retried = true;
  context.meter.refused(sent, tokens);
  ctx.events.onNotice(
    `The API counted ${tokens.toLocaleString("en-US")} input tokens, more than harness estimated: fitting the conversation again.`,
  );
  return true;
}
