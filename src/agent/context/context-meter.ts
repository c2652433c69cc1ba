/**
 * How many tokens the next request will hold, as near the API's count as harness can tell without
 * the tokenizer. Each response says exactly what its request held (`contextTokens`, from
 * `usage.input_tokens` and the cache fields), and its `output_tokens` say what the answer adds; so
 * the next request is that, plus an estimate of what was appended since (the tool results), scaled
 * by how the estimate compared with the API's count so far (never scaled down for new text). After an
 * edit of the conversation the whole request is estimated again, scaled the same way.
 *
 * Decided here: harness does not call the count-tokens endpoint before each request. It would cost a
 * round trip per step (and its own rate limit) to learn what the last response already told, give or
 * take the newest tool results, which the margin covers.
 */
import type { MessageParam, ModelResponse } from "../../model/model-client.js";
import { messagesTokens } from "./token-estimate.js";

/** The API's count over harness's estimate is kept within these bounds. */
const MIN_RATIO = 0.75;
const MAX_RATIO = 4;

export class ContextMeter {
  #ratio = 1;
  /** The first `count` messages (and the preamble) held `tokens` by the API's count. */
  #anchor: { count: number; tokens: number } | undefined;

  /** `preamble`: the estimate of the system prompt and tools (token-estimate.ts). */
  constructor(private readonly preamble: number) {}

  /** The API's count over harness's estimate, as learned so far. */
  get ratio(): number {
    return this.#ratio;
  }

  /** Tokens a request with these messages would hold. */
  estimate(messages: readonly MessageParam[]): number {
    const anchor = this.#anchor;
    if (anchor !== undefined && anchor.count <= messages.length) {
      const added = messagesTokens(messages.slice(anchor.count));
      return anchor.tokens + Math.ceil(added * Math.max(this.#ratio, 1));
    }
    return Math.ceil((this.preamble + messagesTokens(messages)) * this.#ratio);
  }

  /**
   * A request with `sent` was answered with `response`, and the conversation is now `after` (the
   * answer appended, and anything a compaction stands for dropped).
   */
  observe(sent: readonly MessageParam[], response: ModelResponse, after: readonly MessageParam[]): void {
    const { usage } = response;
    const counted =
      response.contextTokens ??
      usage.inputTokens + usage.cacheReadInputTokens + usage.cacheCreationInputTokens;
    if (!(counted > 0)) return;
    // After a compaction the count is of the compacted context, not of what was sent.
    if (response.compactionUsage === undefined) {
      const estimated = this.preamble + messagesTokens(sent);
      if (estimated > 0) this.#ratio = Math.min(MAX_RATIO, Math.max(MIN_RATIO, counted / estimated));
    }
    const output = usage.outputTokens - (response.compactionUsage?.outputTokens ?? 0);
    this.#anchor = { count: after.length, tokens: counted + Math.max(0, output) };
  }

  /** The conversation was edited before the newest message the count covers: estimate it whole again. */
  edited(): void {
    this.#anchor = undefined;
  }

  /** The API refused `messages` as `tokens` long: learn from it (the estimate was too low). */
  refused(messages: readonly MessageParam[], tokens: number): void {
    const estimated = this.preamble + messagesTokens(messages);
    if (estimated > 0) this.#ratio = Math.min(MAX_RATIO, Math.max(this.#ratio, (tokens / estimated) * 1.05));
    this.#anchor = undefined;
  }
}
