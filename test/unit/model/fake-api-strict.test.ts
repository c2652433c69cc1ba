/**
 * The fake's window, Models API, compaction and signed blocks are what the context and thinking tests
 * trust: each refusal the real API makes is checked here, with its status and wording.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type FakeMessagesApi,
  type FakeModel,
  startFakeMessagesApi,
  textReply,
  toolUseReply,
} from "../../support/fake-messages-api.js";
import { signCompaction, signThinking } from "../../support/fake-signatures.js";

const KEY = "sk-ant-test-key";
const MODEL = "claude-fake-1";
const WINDOW = 60_000;
const CATALOG: Record<string, FakeModel> = {
  [MODEL]: { contextWindow: WINDOW, compaction: true, thinking: { adaptive: true }, effort: ["low", "high"] },
  "claude-plain": { contextWindow: WINDOW },
};

let api: FakeMessagesApi;
beforeEach(async () => {
  api = await startFakeMessagesApi({ apiKey: KEY, catalog: CATALOG });
});
afterEach(() => api.close());

const HEADERS = { "x-api-key": KEY, "anthropic-version": "2023-06-01", "content-type": "application/json" };
const body = (extra: Record<string, unknown> = {}) => ({
  model: MODEL,
  max_tokens: 1000,
  messages: [{ role: "user", content: "hi" }],
  ...extra,
});
const post = async (json: unknown, beta?: string) => {
  const headers = beta === undefined ? HEADERS : { ...HEADERS, "anthropic-beta": beta };
  const res = await fetch(`${api.url}/v1/messages`, { method: "POST", headers, body: JSON.stringify(json) });
  return { status: res.status, json: (await res.json()) as Answer };
};
/** What the fake answers, as far as these tests read it. */
interface Answer {
  error?: { type?: string; message?: string; details?: { error_code?: string } };
  content: Array<{ type: string }>;
  usage: { input_tokens: number; iterations: Array<{ type: string; input_tokens: number }> };
  capabilities: {
    context_management: Record<string, unknown>;
    thinking: { types: Record<string, unknown> };
    effort: Record<string, unknown>;
  };
}

const refusal = async (json: unknown, beta?: string) => {
  const { status, json: answer } = await post(json, beta);
  return {
    status,
    type: answer.error?.type,
    message: answer.error?.message,
    code: answer.error?.details?.error_code,
  };
};

describe("fake Models API", () => {
  it("answers GET /v1/models/{id} with every capability key, and 404 for an unknown model", async () => {
    const res = await fetch(`${api.url}/v1/models/${MODEL}`, { headers: HEADERS });
    expect(res.status).toBe(200);
    const info = (await res.json()) as Answer;
    expect(info).toMatchObject({ type: "model", id: MODEL, max_input_tokens: WINDOW });
    expect(info.capabilities.context_management["compact_20260112"]).toEqual({ supported: true });
    expect(info.capabilities.thinking.types).toMatchObject({
      adaptive: { supported: true },
      enabled: { supported: false },
    });
    expect(info.capabilities.effort).toMatchObject({
      supported: true,
      low: { supported: true },
      max: { supported: false },
    });
    const unknown = await fetch(`${api.url}/v1/models/claude-nope`, { headers: HEADERS });
    expect(unknown.status).toBe(404);
  });
});

describe("fake Messages API: the window", () => {
  it("refuses a prompt over the window, and a prompt plus max_tokens over it, in the API's words", async () => {
    const long = "x".repeat(WINDOW * 3 + 300);
    expect(await refusal(body({ messages: [{ role: "user", content: long }] }))).toMatchObject({
      status: 400,
      type: "invalid_request_error",
      message: expect.stringMatching(/^prompt is too long: \d+ tokens > 60000 maximum$/),
    });
    const almost = "x".repeat((WINDOW - 900) * 3);
    expect(await refusal(body({ messages: [{ role: "user", content: almost }] }))).toMatchObject({
      status: 400,
      message: expect.stringMatching(
        /^input length and `max_tokens` exceed context limit: \d+ \+ 1000 > 60000/,
      ),
    });
    expect(api.pending()).toBe(0);
  });
});

describe("fake Messages API: betas and capabilities", () => {
  const compactEdit = {
    edits: [{ type: "compact_20260112", trigger: { type: "input_tokens", value: 50_000 } }],
  };

  it("refuses context_management without its beta header", async () => {
    expect(await refusal(body({ context_management: compactEdit }))).toMatchObject({
      status: 400,
      message: "context_management: Extra inputs are not permitted",
    });
    expect(
      await refusal(body({ context_management: compactEdit }), "context-management-2025-06-27"),
    ).toMatchObject({
      message: expect.stringContaining("Input tag 'compact_20260112' found"),
    });
  });

  it("refuses compaction on a model without it, and a trigger below the API's smallest", async () => {
    expect(
      await refusal(body({ model: "claude-plain", context_management: compactEdit }), "compact-2026-01-12"),
    ).toMatchObject({
      message: expect.stringContaining("'compact_20260112' is not supported for model claude-plain"),
    });
    const low = { edits: [{ type: "compact_20260112", trigger: { type: "input_tokens", value: 10_000 } }] };
    expect(await refusal(body({ context_management: low }), "compact-2026-01-12")).toMatchObject({
      message: "context_management.edits.0.trigger.value: Input should be greater than or equal to 50000",
    });
  });

  it("refuses thinking a model lacks, a budget it cannot take, and thinking with a forced tool", async () => {
    expect(
      await refusal(body({ thinking: { type: "enabled", budget_tokens: 2000 }, max_tokens: 4000 })),
    ).toMatchObject({
      message: `thinking.type: 'enabled' is not supported for model ${MODEL}`,
    });
    expect(await refusal(body({ thinking: { type: "enabled", budget_tokens: 500 } }))).toMatchObject({
      message: "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024",
    });
    const forced = {
      thinking: { type: "adaptive" },
      tools: [{ name: "t", input_schema: { type: "object" } }],
      tool_choice: { type: "tool", name: "t" },
    };
    expect(await refusal(body(forced))).toMatchObject({
      message: "Thinking may not be enabled when tool_choice forces tool use.",
    });
    expect(await refusal(body({ output_config: { effort: "max" } }))).toMatchObject({
      message: `output_config.effort: 'max' is not supported for model ${MODEL}`,
    });
  });
});

describe("fake Messages API: signed blocks sent back", () => {
  const thinking = { type: "thinking", thinking: "Let me look.", signature: signThinking("Let me look.") };
  const conversation = (first: Record<string, unknown>) => [
    { role: "user", content: "go" },
    { role: "assistant", content: [first, { type: "tool_use", id: "t1", name: "bash", input: {} }] },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "ok" }] },
  ];

  it("accepts a thinking block unchanged and refuses an altered one", async () => {
    api.enqueue(textReply("fine"));
    expect((await post(body({ messages: conversation(thinking) }))).status).toBe(200);
    expect(
      await refusal(body({ messages: conversation({ ...thinking, thinking: "Let me look!" }) })),
    ).toMatchObject({
      status: 400,
      message: "messages.1.content.0: Invalid `signature` in `thinking` block",
    });
  });

  it("refuses the last tool-use turn sent back without the thinking that came with it", async () => {
    api.enqueue({
      content: [
        { type: "thinking", thinking: "Plan." },
        { type: "tool_use", id: "t9", name: "bash", input: {} },
      ],
    });
    expect((await post(body({ thinking: { type: "adaptive" } }))).status).toBe(200);
    const dropped = [
      { role: "user", content: "hi" },
      { role: "assistant", content: [{ type: "tool_use", id: "t9", name: "bash", input: {} }] },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "t9", content: "ok" }] },
    ];
    expect(await refusal(body({ thinking: { type: "adaptive" }, messages: dropped }))).toMatchObject({
      message: expect.stringMatching(
        /^messages\.1\.content\.0\.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`/,
      ),
    });
  });

  it("refuses a compaction block altered, forged, misplaced, or sent without the beta", async () => {
    const block = { type: "compaction", content: "Summary.", ...signCompaction("Summary.") };
    const starting = (first: Record<string, unknown>) => [
      { role: "assistant", content: [first, { type: "text", text: "Going on." }] },
      { role: "user", content: "next" },
    ];
    api.enqueue(textReply("ok"));
    expect((await post(body({ messages: starting(block) }), "compact-2026-01-12")).status).toBe(200);
    expect(
      await refusal(body({ messages: starting({ ...block, content: "Summary!" }) }), "compact-2026-01-12"),
    ).toMatchObject({
      code: "compaction_content_mismatch",
    });
    expect(
      await refusal(
        body({ messages: starting({ ...block, signature: "csig_made-up" }) }),
        "compact-2026-01-12",
      ),
    ).toMatchObject({
      code: "compaction_signature_invalid",
    });
    const misplaced = [
      { role: "user", content: "hi" },
      { role: "assistant", content: [{ type: "text", text: "a" }, block] },
      { role: "user", content: "next" },
    ];
    expect(await refusal(body({ messages: misplaced }), "compact-2026-01-12")).toMatchObject({
      code: "compaction_block_misplaced",
    });
    expect((await refusal(body({ messages: starting(block) }))).status).toBe(400);
  });
});

describe("fake Messages API: server compaction", () => {
  it("compacts past the trigger: a signed compaction block first, its usage as an iteration", async () => {
    api.enqueue(toolUseReply("bash", { command: "ls" }));
    const big = "y".repeat(160_000);
    const edit = { edits: [{ type: "compact_20260112", trigger: { type: "input_tokens", value: 50_000 } }] };
    const { status, json } = await post(
      body({ messages: [{ role: "user", content: big }], context_management: edit }),
      "compact-2026-01-12",
    );
    expect(status).toBe(200);
    expect(api.requests[0]?.compacted).toBe(true);
    expect(json.content[0]).toMatchObject({
      type: "compaction",
      content: expect.stringMatching(/^Compaction 1:/),
    });
    expect(json.content[1]).toMatchObject({ type: "tool_use", name: "bash" });
    const [compaction, message] = json.usage.iterations;
    expect(compaction).toMatchObject({ type: "compaction", input_tokens: api.requests[0]?.inputTokens });
    expect(message?.type).toBe("message");
    expect(json.usage.input_tokens).toBe(message?.input_tokens);
    expect(message?.input_tokens).toBeLessThan(5_000);
  });
});
