/**
 * A fake Anthropic Messages API on 127.0.0.1, close enough to the real protocol that the real SDK
 * cannot tell: validated requests, scripted replies (JSON or SSE), scripted HTTP and mid-stream errors.
 * Anchor: anthropic-sdk-typescript tests run the real client against a local mock server (`scripts/mock`).
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { MessageCreateParamsBase } from "@anthropic-ai/sdk/resources/beta/messages/messages";
import {
  checkSignedBlocks,
  checkWindow,
  compact,
  effectiveMessages,
  FakeTokenizer,
  inputTokens,
} from "./fake-context.js";
import {
  type ApiErrorType,
  buildMessage,
  buildStreamEvents,
  type FakeBlock,
  type FakeTurn,
  formatSse,
} from "./fake-messages-sse.js";
import {
  type ValidationFailure,
  validateBody,
  validateHeaders,
  validateJsonObject,
} from "./fake-messages-validate.js";
import {
  betasOf,
  COMPACT_BETA,
  checkFeatures,
  compactionTrigger,
  type FakeModel,
  modelInfo,
} from "./fake-model-catalog.js";
import { ThinkingLedger } from "./fake-thinking.js";

export type { ApiErrorType, FakeBlock, FakeStopReason, FakeTurn, FakeUsage } from "./fake-messages-sse.js";
export { textReply, toolUseReply } from "./fake-messages-sse.js";
export type { FakeEffort, FakeModel } from "./fake-model-catalog.js";

/** A scripted HTTP error response, with the real error body shape. */
export interface FakeHttpError {
  /** HTTP status, e.g. 429 or 529. */
  status: number;
  /** Defaults from the status: 429 → rate_limit_error, 529 → overloaded_error, other 5xx → api_error, … */
  type?: ApiErrorType;
  /** The body's `error.message`; defaults to the API's usual wording for the type. */
  message?: string;
  /** Sent as `retry-after` (seconds). When set, `retry-after-ms` is only sent if given too. */
  retryAfter?: string;
  /** Sent as `retry-after-ms`; 429/5xx get the server's default (10 ms) unless `retryAfter` is set. */
  retryAfterMs?: number;
}

/** What the fake answers one request with. */
export type FakeReply = FakeTurn | { httpError: FakeHttpError } | { disconnect: true };

/** A reply, or a function computing it from the request (to assert on it or echo it). */
export type FakeScript = FakeReply | ((request: RecordedRequest) => FakeReply | Promise<FakeReply>);

/** One request as the fake received it. */
export interface RecordedRequest {
  /** HTTP method, normally "POST". */
  method: string;
  /** Path and query, e.g. "/v1/messages". */
  path: string;
  /** Lower-cased header names. */
  headers: IncomingHttpHeaders;
  /** The parsed JSON body, typed as the SDK's params; `undefined` if it was not JSON. */
  body: MessageCreateParamsBase;
  /** The body exactly as sent, e.g. to count `"cache_control"` occurrences. */
  rawBody: string;
  /** The `request-id` the fake answered with. */
  requestId: string;
  /** The HTTP status sent; 0 while pending or when the fake dropped the connection. */
  status: number;
  /** When the request's body had arrived (Date.now()). */
  receivedAt: number;
  /** A model of the catalog: the input tokens the request held as the model saw it (before a compaction). */
  inputTokens?: number;
  /** The fake compacted the conversation before answering. */
  compacted?: boolean;
  /** Refused as over the model's context window. */
  refusedForSize?: boolean;
}

/** How the fake behaves; all optional. */
export interface FakeMessagesApiOptions {
  /** When set, any other key gets 401 authentication_error. */
  apiKey?: string;
  /** When set, any other model gets 404 not_found_error "model: <id>", as the API does. */
  models?: string[];
  /** Check requests like the real API (default true). */
  validate?: boolean;
  /** Characters per text_delta (and thinking_delta); default 4. */
  textChunkSize?: number;
  /** Characters per input_json_delta; default 7. */
  jsonChunkSize?: number;
  /** `retry-after-ms` on 429/5xx answers (default 10), so the SDK retries fast. */
  retryAfterMs?: number;
  /**
   * Models with a context window and capabilities: their requests are counted (fake-context.ts) and
   * refused over the window, their features checked (fake-model-catalog.ts), and server-side
   * compaction done when asked. Any other model gets 404, as with `models`.
   */
  catalog?: Record<string, FakeModel>;
  /** Serve `GET /v1/models/{id}` for the catalog's models (default true with a catalog). */
  modelsApi?: boolean;
  /** The fake tokenizer's characters per token (default 3). */
  charsPerToken?: number;
  /** The `tool_changes` of every compaction block the fake makes (default `[]`, as for harness's runs). */
  compactionToolChanges?: unknown[];
}

/** A running fake; close it in `afterEach` (or `await using`). */
export interface FakeMessagesApi {
  /** Base URL to pass as the SDK's `baseURL`, e.g. "http://127.0.0.1:41234". */
  url: string;
  /** Every Messages API request, in arrival order, including rejected ones. */
  requests: RecordedRequest[];
  /** Every other request (the Models API's `GET /v1/models/{id}`, wrong paths), in arrival order. */
  otherRequests: RecordedRequest[];
  /** Adds replies, consumed one per valid request, in order. Rejected requests consume none. */
  enqueue(...scripts: FakeScript[]): void;
  /** Scripted replies not yet consumed. */
  pending(): number;
  /** Drops open connections and stops listening. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

const DEFAULT_TYPES: Record<number, ApiErrorType> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  529: "overloaded_error",
};

const DEFAULT_MESSAGES: Partial<Record<ApiErrorType, string>> = {
  authentication_error: "invalid x-api-key",
  permission_error: "Your API key does not have permission to use the specified resource.",
  not_found_error: "Not found",
  rate_limit_error: "Number of request tokens has exceeded your per-minute rate limit",
  api_error: "Internal server error",
  overloaded_error: "Overloaded",
};

/** An HTTP error reply; type and message default from the status. */
export function httpError(
  status: number,
  extra: Omit<FakeHttpError, "status"> = {},
): { httpError: FakeHttpError } {
  return { httpError: { status, ...extra } };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function sendError(
  res: ServerResponse,
  recorded: RecordedRequest,
  error: FakeHttpError & { errorCode?: string },
  defaultRetryMs: number,
) {
  const type =
    error.type ??
    DEFAULT_TYPES[error.status] ??
    (error.status >= 500 ? "api_error" : "invalid_request_error");
  const message = error.message ?? DEFAULT_MESSAGES[type] ?? "Invalid request";
  const headers: Record<string, string> = { "content-type": "application/json" };
  const retryable = error.status === 429 || error.status >= 500;
  if (error.retryAfter !== undefined) headers["retry-after"] = error.retryAfter;
  const retryMs =
    error.retryAfterMs ?? (retryable && error.retryAfter === undefined ? defaultRetryMs : undefined);
  if (retryMs !== undefined) headers["retry-after-ms"] = String(retryMs);
  recorded.status = error.status;
  res.writeHead(error.status, headers);
  const details = error.errorCode === undefined ? {} : { details: { error_code: error.errorCode } };
  res.end(
    JSON.stringify({ type: "error", error: { type, message, ...details }, request_id: recorded.requestId }),
  );
}

async function sendStream(res: ServerResponse, turn: FakeTurn, events: string[]): Promise<void> {
  let closed = false;
  res.on("close", () => {
    closed = true;
  });
  res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
  for (const event of events) {
    if (turn.eventDelayMs) await sleep(turn.eventDelayMs);
    if (closed) return;
    res.write(event);
  }
  res.end();
}

let nextFakeToolId = 1;

/** The turn with an id on every tool_use block, so the whole message and its stream agree. */
function withToolIds(turn: FakeTurn): FakeTurn {
  return {
    ...turn,
    content: turn.content.map((block) =>
      block.type === "tool_use" && block.id === undefined
        ? { ...block, id: `toolu_fake_${nextFakeToolId++}` }
        : block,
    ),
  };
}

function usageEntry(type: string, input: number, output: number): Record<string, unknown> {
  return {
    type,
    input_tokens: input,
    output_tokens: output,
    cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0,
    cache_creation: null,
  };
}

/** Starts the fake on 127.0.0.1 with a free port. */
export async function startFakeMessagesApi(options: FakeMessagesApiOptions = {}): Promise<FakeMessagesApi> {
  const requests: RecordedRequest[] = [];
  const otherRequests: RecordedRequest[] = [];
  const queue: FakeScript[] = [];
  const chunks = { text: options.textChunkSize ?? 4, json: options.jsonChunkSize ?? 7 };
  const retryMs = options.retryAfterMs ?? 10;
  const tokenizer = new FakeTokenizer(options.charsPerToken ?? 3);
  const ledger = new ThinkingLedger();
  let compactions = 0;
  let counter = 0;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawBody = await readBody(req);
    counter += 1;
    let body: unknown;
    try {
      body = JSON.parse(rawBody);
    } catch {
      body = undefined;
    }
    const recorded: RecordedRequest = {
      method: req.method ?? "",
      path: req.url ?? "",
      headers: req.headers,
      body: body as MessageCreateParamsBase,
      rawBody,
      requestId: `req_fake_${counter}`,
      status: 0,
      receivedAt: Date.now(),
    };
    const path = recorded.path.split("?")[0] ?? "";
    (req.method === "POST" && path === "/v1/messages" ? requests : otherRequests).push(recorded);
    res.setHeader("request-id", recorded.requestId);
    const fail = (f: ValidationFailure) => sendError(res, recorded, f, retryMs);
    const modelPath = /^\/v1\/models\/([^/]+)$/.exec(path);
    if (req.method === "GET" && modelPath !== null && options.catalog && options.modelsApi !== false) {
      const failure = validateHeaders(req.headers, options.apiKey);
      if (failure) return fail(failure);
      const id = decodeURIComponent(modelPath[1] ?? "");
      const known = options.catalog[id];
      if (known === undefined) return fail({ status: 404, type: "not_found_error", message: `model: ${id}` });
      recorded.status = 200;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(modelInfo(id, known)));
      return;
    }
    if (req.method !== "POST" || path !== "/v1/messages") {
      return fail({ status: 404, type: "not_found_error", message: "Not Found" });
    }
    const failure =
      validateHeaders(req.headers, options.apiKey) ??
      (options.validate === false ? validateJsonObject(body) : validateBody(body));
    if (failure) return fail(failure);
    const model = recorded.body.model;
    if (
      (options.models && !options.models.includes(model)) ||
      (options.catalog && options.catalog[model] === undefined)
    ) {
      return fail({ status: 404, type: "not_found_error", message: `model: ${model}` });
    }
    const known = options.catalog?.[model];
    const loose = body as Record<string, unknown>;
    const messages = (recorded.body.messages ?? []) as unknown as Record<string, unknown>[];
    const betas = betasOf(req.headers);
    const thinkingOn = ["adaptive", "enabled"].includes(String(recorded.body.thinking?.type));
    const preamble = { system: loose["system"], tools: loose["tools"] };
    const featureFailure =
      (options.validate === false ? null : checkFeatures(loose, betas, known)) ??
      checkSignedBlocks(messages, betas.includes(COMPACT_BETA)) ??
      ledger.check(effectiveMessages(messages), {
        thinkingOn,
        preserved: known?.preservedThinking === true,
        preamble,
      });
    if (featureFailure) return fail(featureFailure);
    const input = inputTokens(loose, tokenizer);
    if (known !== undefined) {
      recorded.inputTokens = input;
      const tooLong = checkWindow(input, recorded.body.max_tokens, known.contextWindow);
      if (tooLong) {
        recorded.refusedForSize = true;
        return fail(tooLong);
      }
    }
    const script = queue.shift();
    if (script === undefined) {
      // `x-should-retry: false` keeps the SDK from retrying a test-script mistake.
      res.setHeader("x-should-retry", "false");
      const message = `fake-messages-api: no scripted reply left for request ${counter}`;
      return fail({ status: 500, type: "api_error", message });
    }
    let reply: FakeReply;
    try {
      reply = typeof script === "function" ? await script(recorded) : script;
    } catch (error) {
      // A throwing script is how a test asserts on a request; make its message reach the test.
      res.setHeader("x-should-retry", "false");
      const message = `fake-messages-api: script threw: ${error instanceof Error ? error.message : String(error)}`;
      return fail({ status: 500, type: "api_error", message });
    }
    if ("disconnect" in reply) {
      req.socket.destroy();
      return;
    }
    if ("httpError" in reply) return sendError(res, recorded, reply.httpError, retryMs);
    reply = withToolIds(reply);
    const trigger = compactionTrigger(loose);
    // What the model answers from: the request's messages, or its own compaction block alone.
    let context = effectiveMessages(messages);
    if (known !== undefined) {
      let turnInput = input;
      const iterations: Record<string, unknown>[] = [];
      // The docs: compaction starts when the input "reaches" the trigger (150,000 tokens by default).
      if (trigger !== undefined && input >= trigger) {
        const block = compact(context, ++compactions, options.compactionToolChanges) as FakeBlock;
        context = [];
        turnInput = tokenizer.preamble(loose) + tokenizer.block(block) + 4;
        const summaryTokens = tokenizer.block(block);
        iterations.push(usageEntry("compaction", input, summaryTokens));
        reply = { ...reply, content: [block, ...reply.content] };
        recorded.compacted = true;
      }
      const output = reply.content.reduce((sum, b) => sum + tokenizer.block(b), 0);
      if (iterations.length > 0) iterations.push({ ...usageEntry("message", turnInput, output), model });
      reply = {
        ...reply,
        usage: {
          input_tokens: turnInput,
          output_tokens: output,
          ...(iterations.length > 0 ? { iterations } : {}),
          ...reply.usage,
        },
      };
    }
    ledger.record(buildMessage(reply, "", model)["content"] as Record<string, unknown>[], preamble, context);
    const id = `msg_fake_${counter}`;
    recorded.status = 200;
    if (recorded.body.stream !== true) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(buildMessage(reply, id, model)));
      return;
    }
    await sendStream(res, reply, buildStreamEvents(reply, id, model, chunks).map(formatSse));
  }

  const server = createServer((req, res) => {
    // Only socket failures get here (the client went away); there is no one left to answer.
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  const close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    otherRequests,
    enqueue: (...scripts) => void queue.push(...scripts),
    pending: () => queue.length,
    close,
    [Symbol.asyncDispose]: close,
  };
}
