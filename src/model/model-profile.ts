/**
 * What harness knows about a model: its context window and, when the endpoint answers the Models API
 * (`GET /v1/models/{id}`), what it can do. Learned once per model and endpoint (model-catalog.ts);
 * without the Models API, a built-in table gives the window and nothing is assumed about the rest.
 */
import type { ModelInfo } from "@anthropic-ai/sdk/resources/models";
import { EFFORT_LEVELS, type EffortLevel } from "./model-client.js";

/** What the Models API says a model can do (only the parts harness uses). */
export interface ModelCapabilities {
  /** Server-side compaction: `context_management.compact_20260112`. */
  compaction: boolean;
  /** Server-side clearing of old tool results: `context_management.clear_tool_uses_20250919`. */
  clearToolUses: boolean;
  /** `thinking: {type: "adaptive"}` is accepted. */
  thinkingAdaptive: boolean;
  /** `thinking: {type: "enabled", budget_tokens}` is accepted. */
  thinkingEnabled: boolean;
  /** `thinking: {type: "disabled"}` is accepted. */
  thinkingDisabled: boolean;
  /** The `output_config.effort` levels accepted (empty: effort is not supported). */
  effort: EffortLevel[];
}

export interface ModelProfile {
  /** The model id as asked for. */
  id: string;
  /** Most input tokens one request may hold. */
  contextWindow: number;
  /** Most `max_tokens` the model accepts, when known. */
  maxOutputTokens?: number;
  /** Where the window came from: the Models API, `--context-window`, the table, or a guess. */
  windowSource: "models-api" | "flag" | "table" | "default";
  /** What the Models API says; absent when the endpoint does not answer it. */
  capabilities?: ModelCapabilities;
}

/** The window assumed for a model nobody describes: every Claude model since Claude 3 has at least it. */
export const DEFAULT_CONTEXT_WINDOW = 200_000;

/**
 * Context windows by model family, for endpoints without the Models API (Bedrock and Vertex ids
 * included: the patterns are not anchored). The 1M-token windows of some models need a beta header
 * harness does not send, so 200k is what a request may hold.
 */
const WINDOWS: ReadonlyArray<{ pattern: RegExp; window: number }> = [
  { pattern: /claude-(?:opus|sonnet|haiku|fable|mythos)/, window: 200_000 },
  { pattern: /claude-3/, window: 200_000 },
];

/** The table's window for `model`, or undefined. */
export function tableWindow(model: string): number | undefined {
  return WINDOWS.find((row) => row.pattern.test(model))?.window;
}

/** A profile from the table (or the default guess), with no capabilities. */
export function tableProfile(model: string): ModelProfile {
  const window = tableWindow(model);
  return window === undefined
    ? { id: model, contextWindow: DEFAULT_CONTEXT_WINDOW, windowSource: "default" }
    : { id: model, contextWindow: window, windowSource: "table" };
}

/** The Models API's answer as a profile; the table fills a window the answer leaves out. */
export function profileFromModelInfo(model: string, info: ModelInfo): ModelProfile {
  const fallback = tableProfile(model);
  const profile: ModelProfile =
    typeof info.max_input_tokens === "number" && info.max_input_tokens > 0
      ? { id: model, contextWindow: info.max_input_tokens, windowSource: "models-api" }
      : fallback;
  if (typeof info.max_tokens === "number" && info.max_tokens > 0) profile.maxOutputTokens = info.max_tokens;
  const caps = info.capabilities;
  // A compatible endpoint may answer without capabilities: then nothing is known, nothing refused.
  if (caps === null || typeof caps !== "object") return profile;
  const supported = (value: { supported?: unknown } | null | undefined) => value?.supported === true;
  profile.capabilities = {
    compaction: supported(caps?.context_management?.compact_20260112),
    clearToolUses: supported(caps?.context_management?.clear_tool_uses_20250919),
    thinkingAdaptive: supported(caps?.thinking?.types?.adaptive),
    thinkingEnabled: supported(caps?.thinking?.types?.enabled),
    // "True on a model that does not support thinking" (the API's own words).
    thinkingDisabled:
      caps?.thinking?.types?.disabled === undefined || supported(caps.thinking.types.disabled),
    effort: supported(caps?.effort) ? EFFORT_LEVELS.filter((level) => supported(caps?.effort?.[level])) : [],
  };
  return profile;
}
