/**
 * The model as the agent loop sees it. The only runtime importer of `@anthropic-ai/sdk` is
 * `anthropic-model-client.ts`; everything here is types (erased at build time).
 */
import type { ContentBlock, MessageParam, StopReason } from "@anthropic-ai/sdk/resources/messages";
import type { ToolDefinition } from "../tools/tool.js";

export type { ContentBlock, MessageParam, StopReason };

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

export interface ModelRequest {
  /** The system prompt. */
  system: string;
  /** The whole conversation so far, in API shape; roles alternate, starting with "user". */
  messages: MessageParam[];
  /** Tools the model may call. */
  tools: ToolDefinition[];
  /** Output budget for this one response. */
  maxTokens: number;
  /** Aborting stops the request; the promise then rejects with `CanceledError`. */
  signal?: AbortSignal;
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
  /** Tokens of this one response. */
  usage: TokenUsage;
}

/** Live events while a response streams in; for display only. */
export interface ModelStreamHandlers {
  /** A piece of assistant text, as it arrives. */
  onText?: (delta: string) => void;
}

/**
 * Contract: `complete` resolves with the full response, or rejects with `ModelError` (API failures that
 * retries did not cure, with status and request id) or `CanceledError` (signal aborted). It never rejects
 * with anything else, and never throws synchronously. Handlers must not throw.
 */
export interface ModelClient {
  complete(request: ModelRequest, handlers?: ModelStreamHandlers): Promise<ModelResponse>;
}
