/** The fake is what the model and agent tests trust, so it gets tested against the protocol itself. */
import Anthropic from "@anthropic-ai/sdk";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type FakeMessagesApi,
  startFakeMessagesApi,
  textReply,
  toolUseReply,
} from "../../support/fake-messages-api.js";

const KEY = "sk-ant-test-key";
let api: FakeMessagesApi;
beforeEach(async () => {
  api = await startFakeMessagesApi({ apiKey: KEY, jsonChunkSize: 6 });
});
afterEach(() => api.close());

const HEADERS = { "x-api-key": KEY, "anthropic-version": "2023-06-01", "content-type": "application/json" };
const valid = () => ({
  model: "claude-test-1",
  max_tokens: 100,
  messages: [{ role: "user", content: "hi" }],
});
const post = (body: unknown, headers: Record<string, string> = HEADERS) =>
  fetch(`${api.url}/v1/messages`, { method: "POST", headers, body: JSON.stringify(body) });

interface EventData {
  type: string;
  index?: number;
  delta?: Record<string, string>;
  message?: unknown;
}

function parseSse(text: string): { event: string; data: EventData }[] {
  return text
    .trim()
    .split("\n\n")
    .map((chunk) => {
      const [eventLine, dataLine] = chunk.split("\n");
      return {
        event: eventLine?.replace("event: ", "") ?? "",
        data: JSON.parse(dataLine?.replace("data: ", "") ?? ""),
      };
    });
}

describe("fake Messages API: responses", () => {
  it("streams the exact event sequence of the real API", async () => {
    api.enqueue(toolUseReply("bash", { command: "ls -la" }, "Let me look.", "toolu_1"));
    const res = await post({ ...valid(), stream: true });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(res.headers.get("request-id")).toBe("req_fake_1");
    const events = parseSse(await res.text());
    const deltas = (index: number, key: string) =>
      events
        .filter((e) => e.data.index === index && e.event === "content_block_delta")
        .map((e) => e.data.delta ?? {})
        .map((d) => d[key]);
    expect(events.map((e) => e.event).filter((name) => name !== "content_block_delta")).toEqual([
      "message_start",
      "content_block_start",
      "ping",
      "content_block_stop",
      "content_block_start",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
    expect(events[0]?.data.message).toMatchObject({ role: "assistant", content: [], stop_reason: null });
    expect(deltas(0, "text").join("")).toBe("Let me look.");
    const json = deltas(1, "partial_json");
    expect(json[0]).toBe("");
    expect(json.length).toBeGreaterThan(2);
    expect(JSON.parse(json.join(""))).toEqual({ command: "ls -la" });
    expect(events.at(-2)?.data).toEqual({
      type: "message_delta",
      delta: { stop_reason: "tool_use", stop_sequence: null },
      usage: { output_tokens: 5 },
    });
  });

  it("answers a non-streaming request with the whole message, as the SDK expects", async () => {
    api.enqueue(textReply("Hello there", { usage: { input_tokens: 3, cache_read_input_tokens: 7 } }));
    const sdk = new Anthropic({ apiKey: KEY, baseURL: api.url, maxRetries: 0 });
    const message = await sdk.messages.create({ ...valid(), messages: [{ role: "user", content: "hi" }] });
    expect(message).toMatchObject({
      id: "msg_fake_1",
      role: "assistant",
      content: [{ type: "text", text: "Hello there" }],
      stop_reason: "end_turn",
      usage: {
        input_tokens: 3,
        output_tokens: 5,
        cache_read_input_tokens: 7,
        cache_creation_input_tokens: 0,
      },
    });
  });

  it("records every request with headers and parsed body, and lets a script see it", async () => {
    api.enqueue((req) => textReply(`you said ${JSON.stringify(req.body.messages[0]?.content)}`));
    const res = await post(valid());
    expect(((await res.json()) as { content: { text: string }[] }).content[0]?.text).toBe('you said "hi"');
    expect(api.requests[0]).toMatchObject({
      method: "POST",
      path: "/v1/messages",
      body: valid(),
      status: 200,
    });
    expect(api.requests[0]?.headers["x-api-key"]).toBe(KEY);
  });

  it("answers an unscripted request with a non-retryable 500 that says why", async () => {
    const res = await post(valid());
    expect(res.status).toBe(500);
    expect(res.headers.get("x-should-retry")).toBe("false");
    expect(await res.json()).toEqual({
      type: "error",
      error: { type: "api_error", message: "fake-messages-api: no scripted reply left for request 1" },
      request_id: "req_fake_1",
    });
  });
});

const toolUse = (id: string) => ({ type: "tool_use", id, name: "bash", input: { command: "ls" } });
const toolResult = (id: string) => ({ type: "tool_result", tool_use_id: id, content: "ok" });
const marked = { type: "text", text: "x", cache_control: { type: "ephemeral" } };

describe("fake Messages API: request validation", () => {
  it.each<[string, Record<string, unknown>, RegExp]>([
    ["no model", { model: undefined }, /^model: Field required/],
    ["max_tokens 0", { max_tokens: 0 }, /^max_tokens: Input should be an integer greater than or equal to 1/],
    ["no messages", { messages: [] }, /^messages: Input should be a non-empty list/],
    [
      "assistant first",
      { messages: [{ role: "assistant", content: "hi" }] },
      /first message must use the "user" role/,
    ],
    [
      "two user messages in a row",
      {
        messages: [
          { role: "user", content: "a" },
          { role: "user", content: "b" },
        ],
      },
      /roles must alternate between "user" and "assistant"/,
    ],
    [
      "an unanswered tool_use",
      {
        messages: [
          { role: "user", content: "a" },
          { role: "assistant", content: [toolUse("t1")] },
          { role: "user", content: "b" },
        ],
      },
      /^messages\.2: `tool_use` ids were found without `tool_result` blocks immediately after: t1\./,
    ],
    [
      "a tool_result after text",
      {
        messages: [
          { role: "user", content: "a" },
          { role: "assistant", content: [toolUse("t1")] },
          { role: "user", content: [{ type: "text", text: "first" }, toolResult("t1")] },
        ],
      },
      /^messages\.2: `tool_use` ids were found without `tool_result` blocks immediately after: t1\./,
    ],
    [
      "a tool_result for an unknown id",
      {
        messages: [
          { role: "user", content: "a" },
          { role: "assistant", content: [toolUse("t1")] },
          { role: "user", content: [toolResult("t1"), toolResult("t2")] },
        ],
      },
      /unexpected `tool_use_id` found in `tool_result` blocks: t2/,
    ],
    [
      "an empty text block",
      { messages: [{ role: "user", content: [{ type: "text", text: "" }] }] },
      /text content blocks must be non-empty/,
    ],
    [
      "empty string content",
      { messages: [{ role: "user", content: "" }] },
      /all messages must have non-empty content/,
    ],
    [
      "5 cache_control blocks",
      { messages: [{ role: "user", content: [marked, marked, marked, marked, marked] }] },
      /^A maximum of 4 blocks with cache_control may be provided\. Found 5\./,
    ],
    [
      "a bad tool name",
      { tools: [{ name: "run bash", input_schema: { type: "object" } }] },
      /tools\.0\.custom\.name: String should match pattern/,
    ],
    [
      "a tool without input_schema",
      { tools: [{ name: "bash" }] },
      /tools\.0\.custom\.input_schema: Field required/,
    ],
  ])("rejects %s with 400 invalid_request_error", async (_name, change, message) => {
    api.enqueue(textReply("must not be consumed"));
    const res = await post({ ...valid(), ...change });
    const body = (await res.json()) as { type: string; error: { type: string; message: string } };
    expect(res.status).toBe(400);
    expect(body.type).toBe("error");
    expect(body.error.type).toBe("invalid_request_error");
    expect(body.error.message).toMatch(message);
    expect(api.pending()).toBe(1);
  });

  it("rejects a missing key with 401 and a missing anthropic-version with 400", async () => {
    const { "x-api-key": _key, ...noKey } = HEADERS;
    const { "anthropic-version": _version, ...noVersion } = HEADERS;
    const res1 = await post(valid(), noKey);
    expect(res1.status).toBe(401);
    expect(((await res1.json()) as { error: { type: string } }).error.type).toBe("authentication_error");
    const res2 = await post(valid(), noVersion);
    expect(res2.status).toBe(400);
    expect(await res2.json()).toMatchObject({ error: { message: "anthropic-version: header is required" } });
  });

  it("accepts a well-formed tool round trip and a trailing assistant prefill", async () => {
    api.enqueue(textReply("one"), textReply("two"));
    const roundTrip = [
      { role: "user", content: "a" },
      { role: "assistant", content: [{ type: "text", text: "running" }, toolUse("t1"), toolUse("t2")] },
      { role: "user", content: [toolResult("t1"), toolResult("t2"), { type: "text", text: "go on" }] },
    ];
    expect((await post({ ...valid(), messages: roundTrip })).status).toBe(200);
    const prefill = [...valid().messages, { role: "assistant", content: "The answer is" }];
    expect((await post({ ...valid(), messages: prefill })).status).toBe(200);
  });
});
