/**
 * `ModelClient` over the Anthropic Messages API, streaming. The only file that imports the SDK at runtime.
 * The SDK retries 408/409/429/5xx/529 and connection failures with backoff (honouring `retry-after-ms` and
 * `retry-after`); that covers a streaming request too, as long as it fails before the first event.
 */
import Anthropic, { APIConnectionError, APIError, APIUserAbortError } from "@anthropic-ai/sdk";
import { CanceledError, type HarnessError, ModelError } from "../errors.js";
import { buildParams, toModelResponse } from "./anthropic-request.js";
import type { ModelClient, ModelRequest, ModelResponse, ModelStreamHandlers } from "./model-client.js";
import { type ModelProfile, profileFromModelInfo } from "./model-profile.js";

/** How to reach the API and which model to ask. */
export interface AnthropicModelClientOptions {
  /** The API key (ANTHROPIC_API_KEY). It is the only credential used: ANTHROPIC_AUTH_TOKEN is ignored. */
  apiKey: string;
  /** API base URL; when absent the SDK uses ANTHROPIC_BASE_URL, else https://api.anthropic.com. */
  baseURL?: string;
  /** Model id sent with every request, e.g. "claude-sonnet-4-5". */
  model: string;
  /** Retries per request on 408/409/429/5xx/529 and connection errors (default 4). */
  maxRetries?: number;
  /** Per-attempt limit for the response headers to arrive, in ms (SDK default: 10 minutes). */
  timeoutMs?: number;
}

/**
 * Mid-stream `event: error` arrives after a 200, so the SDK's APIError has no status. We give it the
 * status the same error type has as an HTTP answer, so callers can treat "overloaded" alike either way.
 */
const STATUS_OF_ERROR_TYPE: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  overloaded_error: 529,
};

/**
 * The SDK writes its deprecation warnings ("The model '…' is deprecated and will reach end-of-life
 * …") with console.warn before every request: once per process is enough, the rest only bury the
 * run's own output. Other console output passes unchanged.
 */
let warnFilterInstalled = false;
function warnOnce(): void {
  if (warnFilterInstalled) return;
  warnFilterInstalled = true;
  const seen = new Set<string>();
  const warn = console.warn.bind(console);
  console.warn = (...args: unknown[]) => {
    const text = args.map(String).join(" ");
    if (/\bis deprecated\b/.test(text)) {
      if (seen.has(text)) return;
      seen.add(text);
    }
    warn(...args);
  };
}

/**
 * Streams each turn with `messages.stream`, with prompt caching, mapping every failure to a
 * `HarnessError`.
 */
export class AnthropicModelClient implements ModelClient {
  readonly #client: Anthropic;
  readonly #model: string;
  readonly #maxRetries: number;

  constructor(options: AnthropicModelClientOptions) {
    warnOnce();
    this.#model = options.model;
    this.#maxRetries = options.maxRetries ?? 4;
    this.#client = new Anthropic({
      apiKey: options.apiKey,
      // `null` keeps the SDK from reading ANTHROPIC_AUTH_TOKEN, so a stray token cannot replace the key.
      authToken: null,
      maxRetries: this.#maxRetries,
      ...(options.baseURL === undefined ? {} : { baseURL: options.baseURL }),
      ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
    });
  }

  async complete(request: ModelRequest, handlers: ModelStreamHandlers = {}): Promise<ModelResponse> {
    const { signal } = request;
    if (signal?.aborted) throw new CanceledError("the model request was canceled before it was sent");
    try {
      // The beta endpoint always: its types are the real API's plus the blocks only it carries, and a
      // request without a beta feature sends no `anthropic-beta` header.
      const params = buildParams(request, this.#model);
      const stream = this.#client.beta.messages.stream(params, signal ? { signal } : {});
      const { onText, onThinking } = handlers;
      if (onText) stream.on("text", (delta) => onText(delta));
      if (onThinking) stream.on("thinking", (delta, snapshot) => onThinking(delta, snapshot === delta));
      return toModelResponse(await stream.finalMessage());
    } catch (error) {
      throw this.#toHarnessError(error, signal);
    }
  }

  /**
   * What the Models API says about the model, or `undefined` when the endpoint does not answer it (a
   * compatible endpoint without `GET /v1/models/{id}`). Rejects with `ModelError` when the API could
   * not be asked (unreachable, key refused): the caller decides whether that matters.
   */
  async describeModel(signal?: AbortSignal): Promise<ModelProfile | undefined> {
    try {
      const info = await this.#client.models.retrieve(this.#model, null, {
        maxRetries: Math.min(this.#maxRetries, 1),
        timeout: 15_000,
        ...(signal ? { signal } : {}),
      });
      return profileFromModelInfo(this.#model, info);
    } catch (error) {
      // An endpoint without the Models API: a 404 (or a compatible server's 400, 405 or 501).
      if (error instanceof APIError && [400, 404, 405, 501].includes(error.status ?? 0)) return undefined;
      throw this.#toHarnessError(error, signal);
    }
  }

  #toHarnessError(error: unknown, signal: AbortSignal | undefined): HarnessError {
    if (signal?.aborted || error instanceof APIUserAbortError) {
      return new CanceledError("the model request was canceled", { cause: error });
    }
    if (error instanceof APIConnectionError) {
      const message = `cannot reach the Messages API at ${this.#client.baseURL}: ${describeCause(error)}`;
      return new ModelError(message, { cause: error });
    }
    if (error instanceof APIError) {
      const status = error.status ?? (error.type ? STATUS_OF_ERROR_TYPE[error.type] : undefined);
      return new ModelError(this.#describeApiError(error, status), {
        cause: error,
        status,
        requestID: error.requestID ?? undefined,
        retryAfterMs: retryAfterMs(error.headers),
      });
    }
    return new ModelError(`the Messages API call failed: ${describeCause(error)}`, { cause: error });
  }

  #describeApiError(error: APIError, status: number | undefined): string {
    // Callers print one line per error, so fold any line breaks the API put in its message.
    const detail = (error.apiMessage ?? error.message).replace(/\s+/g, " ").trim();
    if (error.status === undefined) {
      return `the Messages API failed mid-response (${error.type ?? "unknown error"}): ${detail}; try again`;
    }
    // With retries off, the caller retries (harness batch's shared backoff) and says how often itself.
    const retries =
      this.#maxRetries === 0
        ? ""
        : ` after ${this.#maxRetries} ${this.#maxRetries === 1 ? "retry" : "retries"}`;
    switch (status) {
      case 400:
        return `the API rejected the request (400): ${detail}`;
      case 401:
        return "the API key was rejected (401): check ANTHROPIC_API_KEY";
      case 403:
        return `permission denied (403): ${detail}; check that the API key may use this model`;
      case 404:
        // An unknown model says "model: <id>"; anything else is a wrong path, i.e. a wrong base URL.
        return /model/i.test(detail)
          ? `model '${this.#model}' not found (404): check MODEL_ID / --model`
          : `the API answered 404 (${detail}) at ${this.#client.baseURL}: check ANTHROPIC_BASE_URL`;
      case 429:
        return `rate limited (429)${retries}: ${detail}; wait and try again`;
      case 529:
        return `the API is overloaded (529)${retries}: ${detail}; try again later`;
      default:
        return status !== undefined && status >= 500
          ? `server error (${status})${retries}: ${detail}; try again later`
          : `the API answered ${status}: ${detail}`;
    }
  }
}

/**
 * The wait the API asked for, in ms: `retry-after-ms` first, then `retry-after` in seconds or as an
 * HTTP date (the headers the SDK's own retries honour); undefined when absent or unreadable.
 */
function retryAfterMs(headers: Headers | undefined): number | undefined {
  const ms = Number.parseFloat(headers?.get("retry-after-ms") ?? "");
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const after = headers?.get("retry-after");
  if (!after) return undefined;
  const seconds = Number.parseFloat(after);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(after);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

/** The messages of an error and its causes, e.g. "fetch failed: connect ECONNREFUSED 127.0.0.1:9". */
function describeCause(error: unknown): string {
  const parts: string[] = [];
  // The SDK's wrappers say only "Connection error."; the useful words are in the causes.
  let current: unknown = error instanceof APIConnectionError && error.cause ? error.cause : error;
  while (current !== undefined && parts.length < 5) {
    const text = current instanceof Error ? current.message : String(current);
    if (text && !parts.includes(text)) parts.push(text);
    current = current instanceof Error ? current.cause : undefined;
  }
  return parts.join(": ") || "unknown error";
}
