/**
 * The fake's models: what `GET /v1/models/{id}` answers (the SDK's `ModelInfo`, every capability key
 * present as the real API promises), and the checks a Messages request gets against the model's
 * capabilities and the beta headers it sent: a beta field without its header, a capability the
 * model lacks, thinking with a forced tool_choice, each refused with the API's error shape.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { ValidationFailure } from "./fake-messages-validate.js";

export type FakeEffort = "low" | "medium" | "high" | "max";

/** One model the fake knows, and what it can do. */
export interface FakeModel {
  /** Most input tokens a request may hold (`max_input_tokens`). */
  contextWindow: number;
  /** Most `max_tokens` (`max_tokens`); default 64,000. */
  maxOutputTokens?: number;
  /** `context_management.compact_20260112` (and clear_tool_uses_20250919). */
  compaction?: boolean;
  /** Which thinking types it accepts. */
  thinking?: { adaptive?: boolean; enabled?: boolean };
  /** Effort levels it accepts; absent or empty: no effort. */
  effort?: readonly FakeEffort[];
  /**
   * Preserved thinking (Claude Fable 5.1 and later, the 5.5 models): each thinking block sent back is
   * checked against the conversation it was made in (fake-thinking.ts).
   */
  preservedThinking?: boolean;
}

/** The betas a request sent (`anthropic-beta`, comma-separated). */
export function betasOf(headers: IncomingHttpHeaders): string[] {
  const raw = headers["anthropic-beta"];
  const text = Array.isArray(raw) ? raw.join(",") : (raw ?? "");
  return text
    .split(",")
    .map((beta) => beta.trim())
    .filter((beta) => beta !== "");
}

export const COMPACT_BETA = "compact-2026-01-12";
export const CONTEXT_MANAGEMENT_BETA = "context-management-2025-06-27";
/** The API's smallest compaction trigger. */
export const MIN_COMPACTION_TRIGGER = 50_000;

const support = (supported: boolean) => ({ supported });

/** The model as the Models API describes it. */
export function modelInfo(id: string, model: FakeModel): Record<string, unknown> {
  const compaction = model.compaction === true;
  const adaptive = model.thinking?.adaptive === true;
  const enabled = model.thinking?.enabled === true;
  const effort = new Set(model.effort ?? []);
  return {
    type: "model",
    id,
    display_name: id,
    created_at: "2026-01-01T00:00:00Z",
    deprecated_at: null,
    retires_at: null,
    lifecycle: "active",
    line: null,
    max_input_tokens: model.contextWindow,
    max_tokens: model.maxOutputTokens ?? 64_000,
    capabilities: {
      batch: support(true),
      citations: support(true),
      code_execution: support(false),
      context_management: {
        supported: compaction,
        clear_thinking_20251015: support(compaction),
        clear_tool_uses_20250919: support(compaction),
        compact_20260112: support(compaction),
      },
      effort: {
        supported: effort.size > 0,
        low: support(effort.has("low")),
        medium: support(effort.has("medium")),
        high: support(effort.has("high")),
        max: support(effort.has("max")),
        xhigh: null,
      },
      image_input: support(true),
      pdf_input: support(true),
      server_tools: { supported: false, code_execution: support(false), web_search: support(false) },
      structured_outputs: support(true),
      thinking: {
        supported: adaptive || enabled,
        types: {
          adaptive: support(adaptive),
          enabled: support(enabled),
          disabled: support(true),
          between_tools: support(false),
        },
      },
    },
  };
}

const invalid = (message: string): ValidationFailure => ({
  status: 400,
  type: "invalid_request_error",
  message,
});

interface Body {
  model?: unknown;
  max_tokens?: unknown;
  thinking?: unknown;
  tool_choice?: unknown;
  output_config?: unknown;
  context_management?: unknown;
}

/** The compaction trigger a valid request asked for, when it asked for compaction. */
export function compactionTrigger(body: Body): number | undefined {
  const edits = (body.context_management as { edits?: unknown } | undefined)?.edits;
  if (!Array.isArray(edits)) return undefined;
  const edit = edits.find((e) => (e as { type?: unknown })?.type === "compact_20260112") as
    | { trigger?: { value?: unknown } }
    | undefined;
  if (edit === undefined) return undefined;
  const value = edit.trigger?.value;
  return typeof value === "number" ? value : 150_000;
}

/** The features check: betas, thinking, effort, context management. `null` when the request may go on. */
export function checkFeatures(
  body: Body,
  betas: readonly string[],
  model: FakeModel | undefined,
): ValidationFailure | null {
  return checkThinking(body, model) ?? checkEffort(body, model) ?? checkContextManagement(body, betas, model);
}

function checkThinking(body: Body, model: FakeModel | undefined): ValidationFailure | null {
  const thinking = body.thinking as { type?: unknown; budget_tokens?: unknown } | undefined;
  if (thinking === undefined) return null;
  const type = thinking.type;
  if (type !== "adaptive" && type !== "enabled" && type !== "disabled")
    return invalid(
      `thinking: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: 'adaptive', 'disabled', 'enabled'`,
    );
  if (type === "disabled") return null;
  const choice = (body.tool_choice as { type?: unknown } | undefined)?.type;
  if (choice === "any" || choice === "tool")
    return invalid("Thinking may not be enabled when tool_choice forces tool use.");
  if (type === "enabled") {
    const budget = thinking.budget_tokens;
    if (!Number.isInteger(budget) || (budget as number) < 1024)
      return invalid("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024");
    if ((budget as number) >= (body.max_tokens as number))
      return invalid(
        "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size",
      );
  }
  if (model !== undefined && model.thinking?.[type] !== true)
    return invalid(`thinking.type: '${type}' is not supported for model ${String(body.model)}`);
  return null;
}

function checkEffort(body: Body, model: FakeModel | undefined): ValidationFailure | null {
  const config = body.output_config as { effort?: unknown } | undefined;
  const effort = config?.effort;
  if (effort === undefined || effort === null) return null;
  if (!["low", "medium", "high", "xhigh", "max"].includes(String(effort)))
    return invalid(
      `output_config.effort: Input should be 'low', 'medium', 'high', 'xhigh' or 'max', got '${String(effort)}'`,
    );
  if (model !== undefined && !(model.effort ?? []).includes(effort as FakeEffort))
    return invalid(
      `output_config.effort: '${String(effort)}' is not supported for model ${String(body.model)}`,
    );
  return null;
}

function checkContextManagement(
  body: Body,
  betas: readonly string[],
  model: FakeModel | undefined,
): ValidationFailure | null {
  const config = body.context_management;
  if (config === undefined || config === null) return null;
  const compactBeta = betas.includes(COMPACT_BETA);
  // Without its beta the field does not exist: the API's validator refuses an unknown field.
  if (!compactBeta && !betas.includes(CONTEXT_MANAGEMENT_BETA))
    return invalid("context_management: Extra inputs are not permitted");
  const edits = (config as { edits?: unknown }).edits;
  if (!Array.isArray(edits)) return invalid("context_management.edits: Input should be a valid list");
  for (const [i, edit] of edits.entries()) {
    const type = (edit as { type?: unknown })?.type;
    const tags = compactBeta
      ? ["clear_tool_uses_20250919", "clear_thinking_20251015", "compact_20260112"]
      : ["clear_tool_uses_20250919", "clear_thinking_20251015"];
    if (!tags.includes(String(type)))
      return invalid(
        `context_management.edits.${i}: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: ${tags.map((t) => `'${t}'`).join(", ")}`,
      );
    if (model !== undefined && model.compaction !== true)
      return invalid(
        `context_management.edits.${i}: '${String(type)}' is not supported for model ${String(body.model)}`,
      );
    const trigger = (edit as { trigger?: { type?: unknown; value?: unknown } }).trigger;
    if (type === "compact_20260112" && trigger !== undefined) {
      if (trigger.type !== "input_tokens")
        return invalid(`context_management.edits.${i}.trigger.type: Input should be 'input_tokens'`);
      if (!Number.isInteger(trigger.value) || (trigger.value as number) < MIN_COMPACTION_TRIGGER)
        return invalid(
          `context_management.edits.${i}.trigger.value: Input should be greater than or equal to ${MIN_COMPACTION_TRIGGER}`,
        );
    }
  }
  return null;
}
