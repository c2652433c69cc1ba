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
  "claude-preserving": { contextWindow: WINDOW, thinking: { adaptive: true }, preservedThinking: true },
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
    const block = {
      type: "compaction",
      content: "Summary.",
      ...signCompaction("Summary.", []),
      tool_changes: [],
    };
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

  it("refuses a compaction block whose tool_changes were altered or dropped (sent back unchanged, the SDK says)", async () => {
    const changes = [{ type: "tool_addition", tool: { type: "tool_reference", name: "bash" } }];
    const block = {
      type: "compaction",
      content: "Summary.",
      ...signCompaction("Summary.", changes),
      tool_changes: changes,
    };
    const starting = (first: Record<string, unknown>) => [
      { role: "assistant", content: [first, { type: "text", text: "Going on." }] },
      { role: "user", content: "next" },
    ];
    api.enqueue(textReply("ok"));
    expect((await post(body({ messages: starting(block) }), "compact-2026-01-12")).status).toBe(200);
    const { tool_changes: _dropped, ...withoutChanges } = block;
    for (const altered of [
      withoutChanges,
      { ...block, tool_changes: [] },
      { ...block, tool_changes: [{ type: "tool_removal", tool: { type: "tool_reference", name: "bash" } }] },
    ])
      expect(await refusal(body({ messages: starting(altered) }), "compact-2026-01-12")).toMatchObject({
        status: 400,
        code: "compaction_tool_changes_mismatch",
      });
  });

  it("refuses two compaction blocks with content: only the last one returned is sent", async () => {
    const block = (text: string) => ({
      type: "compaction",
      content: text,
      ...signCompaction(text, []),
      tool_changes: [],
    });
    const messages = [
      { role: "assistant", content: [block("First."), { type: "text", text: "a" }] },
      { role: "user", content: "next" },
      { role: "assistant", content: [block("Second."), { type: "text", text: "b" }] },
      { role: "user", content: "next" },
    ];
    expect(await refusal(body({ messages }), "compact-2026-01-12")).toMatchObject({
      status: 400,
      code: "compaction_block_ambiguous",
    });
  });
});

describe("fake Messages API: preserved thinking's prefix check", () => {
  const PRESERVING = "claude-preserving";
  /** A first turn with thinking and a tool call, answered by the fake; its blocks as sent back. */
  async function firstTurn(): Promise<Array<Record<string, unknown>>> {
    api.enqueue({
      content: [
        { type: "thinking", thinking: "Plan one." },
        { type: "tool_use", id: "p1", name: "bash", input: { command: "ls" } },
      ],
    });
    const { json } = await post(body({ model: PRESERVING, thinking: { type: "adaptive" } }));
    return json.content as unknown as Array<Record<string, unknown>>;
  }
  const answered = (turn: unknown[], result: string, first = "hi") => [
    { role: "user", content: first },
    { role: "assistant", content: turn },
    { role: "user", content: [{ type: "tool_result", tool_use_id: "p1", content: result }] },
  ];

  it("takes thinking back after the same conversation, cache breakpoints moved or not", async () => {
    const turn = await firstTurn();
    api.enqueue(textReply("ok"));
    const messages = answered(turn, "a.txt");
    (messages[2] as { content: Array<Record<string, unknown>> }).content[0] = {
      type: "tool_result",
      tool_use_id: "p1",
      content: "a.txt",
      cache_control: { type: "ephemeral" },
    };
    expect((await post(body({ model: PRESERVING, thinking: { type: "adaptive" }, messages }))).status).toBe(
      200,
    );
  });

  it("refuses thinking whose earlier conversation changed, with or without thinking on", async () => {
    const turn = await firstTurn();
    for (const thinking of [{ type: "adaptive" }, { type: "disabled" }])
      expect(
        await refusal(
          body({ model: PRESERVING, thinking, messages: answered(turn, "a.txt", "hi [REDACTED]") }),
        ),
      ).toMatchObject({
        status: 400,
        message:
          'messages.1.content.0: Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".',
      });
  });

  it("refuses a later thinking block when an earlier one between them is left out", async () => {
    const turn = await firstTurn();
    api.enqueue({
      content: [
        { type: "thinking", thinking: "Plan two." },
        { type: "tool_use", id: "p2", name: "bash", input: { command: "pwd" } },
      ],
    });
    const second = answered(turn, "a.txt");
    const { json } = await post(
      body({ model: PRESERVING, thinking: { type: "adaptive" }, messages: second }),
    );
    const third = [
      ...second,
      { role: "assistant", content: json.content },
      { role: "user", content: [{ type: "tool_result", tool_use_id: "p2", content: "/w" }] },
    ];
    api.enqueue(textReply("both kept"));
    expect(
      (await post(body({ model: PRESERVING, thinking: { type: "adaptive" }, messages: third }))).status,
    ).toBe(200);
    const withoutFirst = third.map((m, i) =>
      i === 1
        ? { ...m, content: (m.content as Array<{ type: string }>).filter((b) => b.type !== "thinking") }
        : m,
    );
    expect(
      await refusal(body({ model: PRESERVING, thinking: { type: "adaptive" }, messages: withoutFirst })),
    ).toMatchObject({
      status: 400,
      message: expect.stringMatching(/^messages\.3\.content\.0: .*bound to a different conversation/),
    });
    // A model without preserved thinking strips earlier turns' thinking: leaving it out is fine there.
    api.enqueue(textReply("fine"));
    expect((await post(body({ thinking: { type: "adaptive" }, messages: withoutFirst }))).status).toBe(200);
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
