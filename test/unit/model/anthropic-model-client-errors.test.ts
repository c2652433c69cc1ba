import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CanceledError, ModelError } from "../../../src/errors.js";
import { AnthropicModelClient } from "../../../src/model/anthropic-model-client.js";
import type { MessageParam, ModelRequest } from "../../../src/model/model-client.js";
import {
  type FakeMessagesApi,
  httpError,
  startFakeMessagesApi,
  textReply,
} from "../../support/fake-messages-api.js";

const KEY = "sk-ant-test-key";
const MODEL = "claude-test-1";

let api: FakeMessagesApi;
beforeEach(async () => {
  api = await startFakeMessagesApi({ apiKey: KEY, models: [MODEL] });
});
afterEach(() => api.close());

const client = (options: { apiKey?: string; model?: string; maxRetries?: number; baseURL?: string } = {}) =>
  new AnthropicModelClient({ apiKey: KEY, baseURL: api.url, model: MODEL, maxRetries: 2, ...options });
const request = (overrides: Partial<ModelRequest> = {}): ModelRequest => ({
  system: "sys",
  messages: [{ role: "user", content: "hi" }],
  tools: [],
  maxTokens: 100,
  ...overrides,
});

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.unreachable("the call should have failed"),
    (error: unknown) => error,
  );
}

async function modelError(promise: Promise<unknown>): Promise<ModelError> {
  const error = await failure(promise);
  expect(error).toBeInstanceOf(ModelError);
  return error as ModelError;
}

describe("AnthropicModelClient errors", () => {
  it("401: says to check the key, with status and request id, without retrying", async () => {
    const error = await modelError(client({ apiKey: "sk-wrong" }).complete(request()));
    expect(error.message).toBe("the API key was rejected (401): check ANTHROPIC_API_KEY");
    expect(error).toMatchObject({ status: 401, requestID: "req_fake_1" });
    expect(api.requests).toHaveLength(1);
  });

  it("403: permission denied, with the API's words", async () => {
    api.enqueue(httpError(403, { message: "This organization is disabled." }));
    const error = await modelError(client().complete(request()));
    expect(error.message).toBe(
      "permission denied (403): This organization is disabled.; check that the API key may use this model",
    );
    expect(error).toMatchObject({ status: 403, requestID: "req_fake_1" });
  });

  it("404: names the unknown model and the setting to fix", async () => {
    const error = await modelError(client({ model: "claude-nope" }).complete(request()));
    expect(error.message).toBe("model 'claude-nope' not found (404): check MODEL_ID / --model");
    expect(error).toMatchObject({ status: 404, requestID: "req_fake_1" });
  });

  it("404 on a wrong path points at the base URL instead", async () => {
    const error = await modelError(client({ baseURL: `${api.url}/v1` }).complete(request()));
    expect(error.message).toBe(`the API answered 404 (Not Found) at ${api.url}/v1: check ANTHROPIC_BASE_URL`);
  });

  it("400: passes on the API's explanation of a malformed conversation", async () => {
    const messages: MessageParam[] = [
      { role: "user", content: "go" },
      { role: "assistant", content: [{ type: "tool_use", id: "toolu_9", name: "bash", input: {} }] },
      { role: "user", content: "I forgot the tool result." },
    ];
    const error = await modelError(client().complete(request({ messages })));
    expect(error.message).toMatch(
      /^the API rejected the request \(400\): messages\.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_9\./,
    );
    expect(error).toMatchObject({ status: 400, requestID: "req_fake_1" });
    expect(api.requests).toHaveLength(1);
  });

  it("429 then success: the SDK retries and the call succeeds", async () => {
    api.enqueue(httpError(429), textReply("after the wait"));
    const response = await client().complete(request());
    expect(response.content).toEqual([{ type: "text", text: "after the wait" }]);
    expect(api.requests.map((r) => r.status)).toEqual([429, 200]);
    expect(api.requests[1]?.headers["x-stainless-retry-count"]).toBe("1");
  });

  it("529 with retry-after: waits as told, then retries the streaming request", async () => {
    api.enqueue(httpError(529, { retryAfter: "0.2" }), textReply("back"));
    const started = Date.now();
    const response = await client().complete(request());
    expect(Date.now() - started).toBeGreaterThanOrEqual(180);
    expect(response.content).toEqual([{ type: "text", text: "back" }]);
    expect(api.requests.map((r) => r.status)).toEqual([529, 200]);
  });

  it("a dropped connection before the first event is retried too", async () => {
    api.enqueue({ disconnect: true }, textReply("reconnected"));
    const response = await client().complete(request());
    expect(response.content).toEqual([{ type: "text", text: "reconnected" }]);
    expect(api.requests).toHaveLength(2);
  });

  it("persistent 529: ModelError 529 after maxRetries retries", async () => {
    api.enqueue(httpError(529), httpError(529), httpError(529));
    const error = await modelError(client().complete(request()));
    expect(error.message).toBe("the API is overloaded (529) after 2 retries: Overloaded; try again later");
    expect(error).toMatchObject({ status: 529, requestID: "req_fake_3" });
    expect(api.requests).toHaveLength(3);
  });

  it("persistent 500: server error after retries", async () => {
    api.enqueue(httpError(500), httpError(500));
    const error = await modelError(client({ maxRetries: 1 }).complete(request()));
    expect(error.message).toBe("server error (500) after 1 retry: Internal server error; try again later");
    expect(error.status).toBe(500);
  });

  it("an error event mid-stream becomes a ModelError, not retried", async () => {
    api.enqueue(
      textReply("Partial answer", { midStreamError: { type: "overloaded_error", message: "Overloaded" } }),
    );
    const deltas: string[] = [];
    const error = await modelError(client().complete(request(), { onText: (d) => deltas.push(d) }));
    expect(deltas.join("")).toBe("Partial answer");
    expect(error.message).toBe(
      "the Messages API failed mid-response (overloaded_error): Overloaded; try again",
    );
    expect(error).toMatchObject({ status: 529, requestID: "req_fake_1" });
    expect(api.requests).toHaveLength(1);
  });

  it("an unreachable server: says where it tried and why", async () => {
    const closed = await startFakeMessagesApi();
    await closed.close();
    const error = await modelError(client({ baseURL: closed.url, maxRetries: 0 }).complete(request()));
    expect(error.message).toMatch(
      new RegExp(`^cannot reach the Messages API at ${closed.url}: .*ECONNREFUSED 127\\.0\\.0\\.1:\\d+`),
    );
    expect(error.status).toBeUndefined();
  });

  it("an api_error event right after message_start carries status 500", async () => {
    api.enqueue(
      textReply("cut", { midStreamError: { type: "api_error", message: "Internal error", afterEvents: 1 } }),
    );
    const error = await modelError(client().complete(request()));
    expect(error.message).toBe("the Messages API failed mid-response (api_error): Internal error; try again");
    expect(error.status).toBe(500);
  });

  it("a stream that ends without message_stop is a ModelError", async () => {
    api.enqueue(textReply("cut short", { truncateAfterEvents: 4 }));
    const error = await modelError(client().complete(request()));
    expect(error.message).toBe(
      "the Messages API call failed: stream ended without producing a Message with role=assistant",
    );
    expect(api.requests).toHaveLength(1);
  });

  it("a connection dropped on every attempt is a connection error", async () => {
    api.enqueue({ disconnect: true });
    const error = await modelError(client({ maxRetries: 0 }).complete(request()));
    expect(error.message).toMatch(
      new RegExp(`^cannot reach the Messages API at ${api.url}: fetch failed: .+`),
    );
  });
});

describe("AnthropicModelClient cancel", () => {
  it("an abort mid-stream rejects with CanceledError", async () => {
    api.enqueue(textReply("a long answer that takes its time", { eventDelayMs: 20 }));
    const controller = new AbortController();
    const deltas: string[] = [];
    const onText = (delta: string) => {
      deltas.push(delta);
      controller.abort();
    };
    const error = await failure(client().complete(request({ signal: controller.signal }), { onText }));
    expect(error).toBeInstanceOf(CanceledError);
    expect(deltas).toHaveLength(1);
  });

  it("an abort during the retry wait rejects promptly", async () => {
    api.enqueue(httpError(429, { retryAfterMs: 10_000 }));
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    const started = Date.now();
    const error = await failure(client().complete(request({ signal: controller.signal })));
    expect(error).toBeInstanceOf(CanceledError);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(api.requests).toHaveLength(1);
  });

  it("an already aborted signal sends nothing", async () => {
    const error = await failure(client().complete(request({ signal: AbortSignal.abort() })));
    expect(error).toBeInstanceOf(CanceledError);
    expect(api.requests).toHaveLength(0);
  });
});
