/**
 * The model as the agent loop sees it. The only runtime importer of `@anthropic-ai/sdk` is
 * `anthropic-model-client.ts`; everything here is types (erased at build time).
 *
 * The conversation's types are the beta Messages API's: they are the real API's blocks plus what
 * only the beta carries (`compaction` blocks, the `compaction` stop reason), and a block the model
 * sent is kept and sent back exactly as it came (thinking and compaction blocks are signed).
 */
import type {
  BetaAssistantMessageParam,
  BetaContentBlock,
  BetaStopReason,
  BetaUserMessageParam,
} from "@anthropic-ai/sdk/resources/beta/messages/messages";
import type { ToolDefinition } from "../tools/tool.js";

/** A block of an assistant response: text, tool_use, thinking, redacted_thinking, compaction, … */
export type ContentBlock = BetaContentBlock;
/** One message of the conversation, in API shape (user or assistant; harness sends no system turns). */
export type MessageParam = BetaUserMessageParam | BetaAssistantMessageParam;
/** Why the model stopped. */
export type StopReason = BetaStopReason;

/** Token counts for one response, or summed over a run. */
export interface TokenUsage {
  /** Input tokens billed at the normal rate (after the last cache breakpoint). */
  inputTokens: number;
  /** Output tokens. */
  outputTokens: number;
  /** Input tokens read from the prompt cache. */
  cacheReadInputTokens: number;
  /** Input tokens written to the prompt cache. */
  cacheCreationInputTokens: number;
}

/** `--thinking`: how the model may think before it answers. */
export type ThinkingSetting =
  /** The model decides whether and how much to think. */
  | { type: "adaptive" }
  /** Extended thinking with a budget (at least 1,024 tokens, below `max_tokens`). */
  | { type: "enabled"; budgetTokens: number }
  /** No thinking. */
  | { type: "disabled" };

/** `--effort`: how much effort the model puts into a response. */
export const EFFORT_LEVELS = ["low", "medium", "high", "max"] as const;
export type EffortLevel = (typeof EFFORT_LEVELS)[number];

export interface ModelRequest {
  /** The system prompt. */
  system: string;
  /** The conversation to send, in API shape; roles alternate, starting with "user" (or with an
   * assistant message that opens with a `compaction` block, which stands for everything before it). */
  messages: MessageParam[];
  /** Tools the model may call. */
  tools: ToolDefinition[];
  /** Output budget for this one response. */
  maxTokens: number;
  /** Aborting stops the request; the promise then rejects with `CanceledError`. */
  signal?: AbortSignal;
  /** Thinking; absent: the model's default. */
  thinking?: ThinkingSetting;
  /** Effort; absent: the model's default. */
  effort?: EffortLevel;
  /**
   * Server-side compaction (the `compact_20260112` strategy, through its beta): when the request's
   * input passes this many tokens, the API summarizes the conversation and answers after a
   * `compaction` block that stands for everything before it.
   */
  compactAtTokens?: number;
}

export interface ModelResponse {
  /** The API's message id. */
  id: string;
  /** The model that answered. */
  model: string;
  /** The whole assistant turn: text, tool_use (and any other) blocks, in order. */
  content: ContentBlock[];
  /** Why the model stopped; `null` only if the stream ended without saying. */
  stopReason: StopReason | null;
  /** Tokens of this response as billed: a server compaction's own tokens included. */
  usage: TokenUsage;
  /**
   * Input tokens of the context the model answered from (input, cache reads and writes of the last
   * sampling iteration): after a compaction, the compacted context. Absent: `usage`'s input fields.
   */
  contextTokens?: number;
  /** A server compaction happened in this response: what it cost (already part of `usage`). */
  compactionUsage?: TokenUsage;
}

/** Live events while a response streams in; for display only. */
export interface ModelStreamHandlers {
  /** A piece of assistant text, as it arrives. */
  onText?: (delta: string) => void;
  /** A piece of thinking, as it arrives; `first` on a thinking block's first piece. */
  onThinking?: (delta: string, first: boolean) => void;
}

/**
 * Contract: `complete` resolves with the full response, or rejects with `ModelError` (API failures that
 * retries did not cure, with status and request id) or `CanceledError` (signal aborted). It never rejects
 * with anything else, and never throws synchronously. Handlers must not throw.
 */
export interface ModelClient {
  complete(request: ModelRequest, handlers?: ModelStreamHandlers): Promise<ModelResponse>;
}
