import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { AnthropicModelClient } from "../../../src/model/anthropic-model-client.js";
import type { MessageParam, ModelRequest } from "../../../src/model/model-client.js";
import type { ToolDefinition } from "../../../src/tools/tool.js";
import {
  type FakeMessagesApi,
  type FakeStopReason,
  startFakeMessagesApi,
  textReply,
  toolUseReply,
} from "../../support/fake-messages-api.js";

const KEY = "sk-ant-test-key";
const MODEL = "claude-test-1";
const tool = (name: string): ToolDefinition => ({
  name,
  description: `The ${name} tool.`,
  inputSchema: { type: "object", properties: { command: { type: "string" } }, required: ["command"] },
});

let api: FakeMessagesApi;
beforeEach(async () => {
  api = await startFakeMessagesApi({ apiKey: KEY, models: [MODEL], jsonChunkSize: 5 });
});
afterEach(() => api.close());

const client = () => new AnthropicModelClient({ apiKey: KEY, baseURL: api.url, model: MODEL, maxRetries: 0 });
const request = (overrides: Partial<ModelRequest> = {}): ModelRequest => ({
  system: "You are a careful engineer.",
  messages: [{ role: "user", content: "List the files." }],
  tools: [tool("bash")],
  maxTokens: 1024,
  ...overrides,
});

describe("AnthropicModelClient streaming", () => {
  it("forwards text deltas as they arrive and resolves with the whole message", async () => {
    const text = "Here are the files in the current directory.";
    api.enqueue(textReply(text));
    const deltas: string[] = [];
    const response = await client().complete(request(), { onText: (d) => deltas.push(d) });
    expect(deltas.length).toBeGreaterThan(5);
    expect(deltas.join("")).toBe(text);
    expect(response.content).toEqual([{ type: "text", text }]);
    expect(response).toMatchObject({ id: "msg_fake_1", model: MODEL, stopReason: "end_turn" });
    expect(api.requests[0]?.body.stream).toBe(true);
  });

  it("assembles tool_use input from input_json_delta chunks", async () => {
    const input = { command: 'grep -rn "TODO" src/ | head -n 5', note: "ünïcødé ✓", nested: { n: [1, 2.5] } };
    api.enqueue(toolUseReply("bash", input, "Let me look.", "toolu_abc"));
    const response = await client().complete(request());
    expect(response.stopReason).toBe("tool_use");
    expect(response.content).toEqual([
      { type: "text", text: "Let me look." },
      { type: "tool_use", id: "toolu_abc", name: "bash", input },
    ]);
  });

  it.each<[FakeStopReason, string | null]>([
    ["end_turn", null],
    ["tool_use", null],
    ["max_tokens", null],
    ["pause_turn", null],
    ["refusal", null],
    ["stop_sequence", "\nEND"],
  ])("returns stop reason %s", async (stopReason, stopSequence) => {
    api.enqueue(textReply("Some output", { stopReason, stopSequence }));
    const response = await client().complete(request());
    expect(response.stopReason).toBe(stopReason);
  });

  it("returns what the SDK makes of a tool_use cut off by max_tokens mid-JSON", async () => {
    // The API closes the truncated block (content_block_stop) and then says max_tokens. The SDK runs
    // the JSON it got through its partial-JSON parser: complete key/value pairs survive, a half-written
    // value is dropped with its key. So `input` looks valid but is not what the model meant: the
    // agent loop must not run tool_use blocks of a max_tokens response.
    api.enqueue({
      content: [
        {
          type: "tool_use",
          id: "toolu_cut",
          name: "bash",
          rawJson: '{"timeout": 30, "command": "rm -rf /tmp/bu',
        },
      ],
      stopReason: "max_tokens",
    });
    api.enqueue({
      content: [
        { type: "tool_use", id: "toolu_cut2", name: "bash", rawJson: '{"command": "ls -la /very/lo' },
      ],
      stopReason: "max_tokens",
    });
    const first = await client().complete(request());
    expect(first.stopReason).toBe("max_tokens");
    expect(first.content).toEqual([
      { type: "tool_use", id: "toolu_cut", name: "bash", input: { timeout: 30 } },
    ]);
    const second = await client().complete(request());
    expect(second.content).toEqual([{ type: "tool_use", id: "toolu_cut2", name: "bash", input: {} }]);
  });

  it("maps usage, including cache reads and writes", async () => {
    const usage = {
      input_tokens: 12,
      output_tokens: 345,
      cache_creation_input_tokens: 678,
      cache_read_input_tokens: 9012,
    };
    api.enqueue(textReply("ok", { usage }));
    const response = await client().complete(request());
    expect(response.usage).toEqual({
      inputTokens: 12,
      outputTokens: 345,
      cacheCreationInputTokens: 678,
      cacheReadInputTokens: 9012,
    });
  });

  it("uses only the API key, even with ANTHROPIC_AUTH_TOKEN set", async () => {
    vi.stubEnv("ANTHROPIC_AUTH_TOKEN", "stray-token");
    try {
      api.enqueue(textReply("ok"));
      await client().complete(request());
      expect(api.requests[0]?.headers.authorization).toBe(`Bearer ${KEY}`);
      expect(api.requests[0]?.headers["anthropic-version"]).toBeTruthy();
    } finally {
      vi.unstubAllEnvs();
    }
  });
});

describe("AnthropicModelClient prompt caching", () => {
  const conversation = (): MessageParam[] => [
    { role: "user", content: "Fix the failing test." },
    {
      role: "assistant",
      content: [
        { type: "text", text: "Running the tests." },
        { type: "tool_use", id: "toolu_1", name: "bash", input: { command: "npm test" } },
      ],
    },
    {
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "toolu_1", content: "1 failing" },
        { type: "text", text: "Keep going." },
      ],
    },
  ];

  it("marks the system prompt, the last tool and the newest user message's last block", async () => {
    const messages = conversation();
    const before = structuredClone(messages);
    api.enqueue(textReply("ok"));
    await client().complete(request({ messages, tools: [tool("bash"), tool("read_file")] }));

    const body = api.requests[0]?.body;
    expect(body?.system).toEqual([
      { type: "text", text: "You are a careful engineer.", cache_control: { type: "ephemeral" } },
    ]);
    expect(body?.tools).toEqual([
      { name: "bash", description: "The bash tool.", input_schema: tool("bash").inputSchema },
      {
        name: "read_file",
        description: "The read_file tool.",
        input_schema: tool("read_file").inputSchema,
        cache_control: { type: "ephemeral" },
      },
    ]);
    expect(body?.messages).toEqual([
      before[0],
      before[1],
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: "1 failing" },
          { type: "text", text: "Keep going.", cache_control: { type: "ephemeral" } },
        ],
      },
    ]);
    expect(api.requests[0]?.rawBody.match(/"cache_control"/g)).toHaveLength(3);
    expect(messages).toEqual(before);
  });

  it("turns a string user message into a text block to mark it, without touching the caller's copy", async () => {
    const messages: MessageParam[] = [{ role: "user", content: "Hello" }];
    api.enqueue(textReply("ok"));
    await client().complete(request({ messages }));
    expect(api.requests[0]?.body.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Hello", cache_control: { type: "ephemeral" } }] },
    ]);
    expect(messages).toEqual([{ role: "user", content: "Hello" }]);
  });

  it("stays within 4 breakpoints when the caller already set some", async () => {
    const messages = conversation();
    const marked = (text: string) => ({
      type: "text" as const,
      text,
      cache_control: { type: "ephemeral" as const },
    });
    messages[0] = { role: "user", content: [marked("a"), marked("b"), marked("c")] };
    api.enqueue(textReply("ok"));
    const response = await client().complete(request({ messages }));
    expect(response.stopReason).toBe("end_turn");
    const raw = api.requests[0]?.rawBody ?? "";
    expect(raw.match(/"cache_control"/g)).toHaveLength(4);
    const content = api.requests[0]?.body.messages[2]?.content as unknown[] | undefined;
    expect(content?.at(-1)).toHaveProperty("cache_control");
  });

  it("leaves out an empty system prompt and an empty tool list", async () => {
    api.enqueue(textReply("ok"));
    await client().complete(request({ system: "", tools: [] }));
    expect(api.requests[0]?.body).not.toHaveProperty("system");
    expect(api.requests[0]?.body).not.toHaveProperty("tools");
  });
});
