/**
 * The client's part of long tasks, thinking and effort, against the strict fake: what it sends (the
 * params, the beta header only when a beta feature is on), what it makes of compaction and thinking
 * streams (blocks kept whole so they go back verbatim), usage with a compaction's own tokens, and the
 * Models API.
 */
import { afterEach, describe, expect, it } from "vitest";
import { AnthropicModelClient } from "../../../src/model/anthropic-model-client.js";
import type { MessageParam, ModelRequest } from "../../../src/model/model-client.js";
import { type FakeMessagesApi, startFakeMessagesApi, toolUseReply } from "../../support/fake-messages-api.js";

const KEY = "sk-ant-test-key";
const MODEL = "claude-fake-1";
let api: FakeMessagesApi | undefined;
afterEach(() => api?.close());

async function start(options: Parameters<typeof startFakeMessagesApi>[0] = {}): Promise<FakeMessagesApi> {
  api = await startFakeMessagesApi({
    apiKey: KEY,
    catalog: {
      [MODEL]: {
        contextWindow: 200_000,
        compaction: true,
        thinking: { adaptive: true, enabled: true },
        effort: ["high"],
      },
    },
    ...options,
  });
  return api;
}
const client = (fake: FakeMessagesApi) =>
  new AnthropicModelClient({ apiKey: KEY, baseURL: fake.url, model: MODEL, maxRetries: 0 });
const request = (messages: MessageParam[], extra: Partial<ModelRequest> = {}): ModelRequest => ({
  system: "s",
  messages,
  tools: [
    {
      name: "bash",
      description: "b",
      inputSchema: { type: "object", properties: {} },
      anthropic: { type: "bash_20250124" },
    },
  ],
  maxTokens: 8000,
  ...extra,
});

describe("AnthropicModelClient: long tasks, thinking, effort", () => {
  it("sends no beta header for a plain request, Anthropic's tools by type and name", async () => {
    const fake = await start();
    fake.enqueue(toolUseReply("bash", { command: "ls" }));
    await client(fake).complete(request([{ role: "user", content: "go" }]));
    const sent = fake.requests[0];
    expect(sent?.headers["anthropic-beta"]).toBeUndefined();
    expect(sent?.body.tools?.[0]).toMatchObject({ type: "bash_20250124", name: "bash" });
    expect(sent?.body.tools?.[0]).not.toHaveProperty("input_schema");
  });

  it("sends thinking, effort and the compaction edit with its beta, and keeps the blocks whole", async () => {
    const fake = await start();
    fake.enqueue({
      content: [
        { type: "thinking", thinking: "I should list the files first." },
        { type: "redacted_thinking", seed: "r1" },
        { type: "tool_use", id: "t1", name: "bash", input: { command: "ls" } },
      ],
    });
    const thinking: ModelRequest["thinking"] = { type: "enabled", budgetTokens: 2048 };
    const thoughts: string[] = [];
    const first = await client(fake).complete(
      request([{ role: "user", content: "go" }], { thinking, effort: "high", compactAtTokens: 150_000 }),
      { onThinking: (delta) => thoughts.push(delta) },
    );
    const sent = fake.requests[0];
    expect(sent?.headers["anthropic-beta"]).toBe("compact-2026-01-12");
    expect(sent?.body).toMatchObject({
      thinking: { type: "enabled", budget_tokens: 2048 },
      output_config: { effort: "high" },
      context_management: {
        edits: [{ type: "compact_20260112", trigger: { type: "input_tokens", value: 150_000 } }],
      },
    });
    expect(thoughts.join("")).toBe("I should list the files first.");
    expect(first.content.map((b) => b.type)).toEqual(["thinking", "redacted_thinking", "tool_use"]);
    // Sent back as they came, the fake's signatures verify.
    fake.enqueue({ content: [{ type: "text", text: "Done." }] });
    const messages: MessageParam[] = [
      { role: "user", content: "go" },
      { role: "assistant", content: first.content },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "a.txt" }] },
    ];
    const second = await client(fake).complete(request(messages, { thinking }));
    expect(second.stopReason).toBe("end_turn");
  });

  it("reads a streamed compaction block whole, bills its iteration and reports the compacted context", async () => {
    const fake = await start();
    fake.enqueue(toolUseReply("bash", { command: "ls" }));
    const response = await client(fake).complete(
      request([{ role: "user", content: "z".repeat(180_000) }], { compactAtTokens: 50_000 }),
    );
    const [block] = response.content;
    expect(block).toMatchObject({ type: "compaction", content: expect.stringMatching(/^Compaction 1/) });
    expect(block).toHaveProperty("signature");
    expect(block).toHaveProperty("encrypted_content");
    const compacted = fake.requests[0]?.inputTokens ?? 0;
    expect(response.compactionUsage?.inputTokens).toBe(compacted);
    expect(response.usage.inputTokens).toBe(compacted + (response.contextTokens ?? 0));
    expect(response.contextTokens).toBeLessThan(5_000);
    // The conversation goes on from the block: sent back first, with the beta even without the edit.
    fake.enqueue({ content: [{ type: "text", text: "ok" }] });
    const tool = response.content.find((b) => b.type === "tool_use");
    const next = await client(fake).complete(
      request([
        { role: "assistant", content: response.content },
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: tool?.type === "tool_use" ? tool.id : "", content: "x" },
          ],
        },
      ]),
    );
    expect(next.stopReason).toBe("end_turn");
    expect(fake.requests[1]?.headers["anthropic-beta"]).toBe("compact-2026-01-12");
  });

  it("describes the model from the Models API, and says nothing for an endpoint without it", async () => {
    const fake = await start();
    const profile = await client(fake).describeModel();
    expect(profile).toMatchObject({
      id: MODEL,
      contextWindow: 200_000,
      windowSource: "models-api",
      capabilities: { compaction: true, thinkingAdaptive: true, thinkingEnabled: true, effort: ["high"] },
    });
    await fake.close();
    api = await startFakeMessagesApi({ apiKey: KEY });
    expect(await client(api).describeModel()).toBeUndefined();
  });
});
