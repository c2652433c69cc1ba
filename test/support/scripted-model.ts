/**
 * A `ModelClient` for unit tests: answers with scripted responses in order, records every request
 * (deep-copied, so later changes to the loop's array don't rewrite history), streams text through
 * `onText` in chunks, throws scripted errors, and rejects invalid conversations as the API would.
 * Anchors: mini-swe-agent `models/test_models.py` (`DeterministicModel`); pi-mono `MockAssistantStream`.
 */
import { CanceledError, ModelError } from "../../src/errors.js";
import type {
  ContentBlock,
  ModelClient,
  ModelRequest,
  ModelResponse,
  ModelStreamHandlers,
  StopReason,
  TokenUsage,
} from "../../src/model/model-client.js";
import { validateConversation } from "./validate-conversation.js";

/** A scripted answer: a response, an error to throw, or a function of the request (may wait for abort). */
export type ModelStep =
  | ModelResponse
  | Error
  | ((request: ModelRequest) => ModelResponse | Promise<ModelResponse>);

/** A request as recorded: everything but the signal, deep-copied. */
export type RecordedRequest = Omit<ModelRequest, "signal">;

export interface ScriptedModelOptions {
  /** Reject requests whose messages the API would reject (a 400 `ModelError`). Default true. */
  validate?: boolean;
  /** Characters per `onText` chunk. Default 4. */
  chunkSize?: number;
}

export class ScriptedModel implements ModelClient {
  /** Every request received, in order. */
  readonly requests: RecordedRequest[] = [];
  readonly #steps: ModelStep[];
  readonly #options: ScriptedModelOptions;

  constructor(steps: ModelStep[], options: ScriptedModelOptions = {}) {
    this.#steps = [...steps];
    this.#options = options;
  }

  /** Scripted steps not used yet. */
  get remaining(): number {
    return this.#steps.length;
  }

  async complete(request: ModelRequest, handlers: ModelStreamHandlers = {}): Promise<ModelResponse> {
    const { signal, ...rest } = request;
    this.requests.push(structuredClone(rest));
    if (this.#options.validate !== false) {
      const problems = validateConversation(request.messages);
      if (problems.length > 0) {
        throw new ModelError(`400 invalid_request_error: ${problems.join("; ")}`, { status: 400 });
      }
    }
    if (signal?.aborted) throw new CanceledError("Request was aborted.");
    const step = this.#steps.shift();
    if (step === undefined) throw new ModelError("ScriptedModel: no scripted response left");
    if (step instanceof Error) throw step;
    const response = await untilAborted(
      Promise.resolve(typeof step === "function" ? step(request) : step),
      signal,
    );
    const size = this.#options.chunkSize ?? 4;
    for (const block of response.content) {
      if (block.type !== "text") continue;
      for (let i = 0; i < block.text.length; i += size) handlers.onText?.(block.text.slice(i, i + size));
    }
    return structuredClone(response);
  }
}

/** A step that never answers: only aborting the request ends it (with `CanceledError`). */
export const hangUntilAborted = (): Promise<ModelResponse> => new Promise<never>(() => {});

async function untilAborted<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new CanceledError("Request was aborted."));
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    return await Promise.race([promise, aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

let nextId = 1;

export function usage(partial: Partial<TokenUsage> = {}): TokenUsage {
  return {
    inputTokens: 10,
    outputTokens: 5,
    cacheReadInputTokens: 0,
    cacheCreationInputTokens: 0,
    ...partial,
  };
}

export function text(value: string): ContentBlock {
  return { type: "text", text: value, citations: null };
}

export function toolUse(id: string, name: string, input: unknown): ContentBlock {
  return { type: "tool_use", id, name, input, caller: { type: "direct" } };
}

/** A `bash` tool_use block. */
export function bash(id: string, command: string, extra: Record<string, unknown> = {}): ContentBlock {
  return toolUse(id, "bash", { command, ...extra });
}

export function response(
  content: ContentBlock[],
  stopReason: StopReason | null,
  tokens: Partial<TokenUsage> = {},
): ModelResponse {
  return { id: `msg_${nextId++}`, model: "claude-test", content, stopReason, usage: usage(tokens) };
}

/** A final answer: text and `end_turn`. */
export function answer(value: string, tokens: Partial<TokenUsage> = {}): ModelResponse {
  return response([text(value)], "end_turn", tokens);
}

/** A response asking for tools (`stop_reason: "tool_use"`), optionally after some text. */
export function toolCalls(...content: ContentBlock[]): ModelResponse {
  return response(content, "tool_use");
}
