import { describe, expect, it } from "vitest";
import { MAX_TOKENS_STREAK_LIMIT } from "../../../src/agent/loop.js";
import { ModelError } from "../../../src/errors.js";
import { blocksOf, fixture } from "../../support/agent-fixture.js";
import { answer, bash, response, text, toolCalls, toolUse } from "../../support/scripted-model.js";
import { assertValidConversation } from "../../support/validate-conversation.js";

describe("runAgent: stop reasons", () => {
  it.each(["end_turn", "stop_sequence"] as const)("%s ends the run as submitted", async (stopReason) => {
    const { run } = fixture([response([text("All done.")], stopReason)]);
    const result = await run();
    expect(result).toMatchObject({ status: "submitted", turns: 1, finalText: "All done." });
    assertValidConversation(result.messages);
  });

  it("end_turn with a tool_use still answers the call and goes on", async () => {
    const { run, sandbox } = fixture([response([bash("t", "ls")], "end_turn"), answer("ok")]);
    const result = await run();
    expect(sandbox.commands).toEqual(["ls"]);
    expect(result).toMatchObject({ status: "submitted", turns: 2 });
    assertValidConversation(result.messages);
  });

  it("pause_turn re-sends the conversation as is, with no new user message", async () => {
    const { run, model } = fixture([response([text("Searching…")], "pause_turn"), answer(" Found it.")]);
    const result = await run();
    expect(result).toMatchObject({ status: "submitted", turns: 2 });
    expect(model.requests[1]?.messages).toEqual([
      { role: "user", content: [{ type: "text", text: "Fix the build." }] },
      { role: "assistant", content: [{ type: "text", text: "Searching…", citations: null }] },
    ]);
    // The continuation joins the paused turn, keeping the roles alternating.
    expect(result.messages).toHaveLength(2);
    expect(blocksOf(result.messages, 1).map((block) => (block.type === "text" ? block.text : ""))).toEqual([
      "Searching…",
      " Found it.",
    ]);
    assertValidConversation(result.messages);
  });

  it("max_tokens with only text asks the model to continue", async () => {
    const { run, model, notices } = fixture([
      response([text("A very long expl")], "max_tokens"),
      answer("ok"),
    ]);
    const result = await run();
    expect(result.status).toBe("submitted");
    const nudge = model.requests[1]?.messages.at(-1);
    expect(nudge?.role).toBe("user");
    expect(JSON.stringify(nudge?.content)).toContain("cut off at the max_tokens limit (1000 output tokens)");
    expect(notices().join("\n")).toContain("max_tokens");
    assertValidConversation(result.messages);
  });

  it("max_tokens cutting off a tool call: complete calls run, the cut one is answered but not run", async () => {
    const { run, sandbox } = fixture([
      response([text("Two steps."), bash("t1", "ls"), bash("t2", "rm -rf buil")], "max_tokens"),
      answer("ok"),
    ]);
    const result = await run();
    expect(sandbox.commands).toEqual(["ls"]);
    const blocks = blocksOf(result.messages, 2);
    expect(blocks.map((block) => block.type)).toEqual(["tool_result", "tool_result", "text"]);
    expect(blocks[1]).toEqual({
      type: "tool_result",
      tool_use_id: "t2",
      content: "Error: this tool call was cut off at max_tokens (1000 output tokens) and was not run.",
      is_error: true,
    });
    expect(blocks[2]?.type === "text" && blocks[2].text).toMatch(
      /last tool call was not run\. Continue in smaller steps/,
    );
    expect(result.status).toBe("submitted");
    assertValidConversation(result.messages);
  });

  it("max_tokens with a tool call whose input is incomplete does not crash", async () => {
    const { run, sandbox } = fixture([response([toolUse("t1", "bash", {})], "max_tokens"), answer("ok")]);
    const result = await run();
    expect(sandbox.commands).toEqual([]);
    expect(blocksOf(result.messages, 2)[0]).toMatchObject({ tool_use_id: "t1", is_error: true });
    assertValidConversation(result.messages);
  });

  it(`stops with format_errors after ${MAX_TOKENS_STREAK_LIMIT} max_tokens responses in a row`, async () => {
    const { run, model, sandbox } = fixture([
      response([text("a")], "max_tokens"),
      response([text("b"), bash("t1", "ls")], "max_tokens"),
      response([text("c"), bash("t2", "echo cut")], "max_tokens"),
      answer("never asked"),
    ]);
    const result = await run();
    expect(result).toMatchObject({ status: "format_errors", turns: 3 });
    expect(model.remaining).toBe(1);
    expect(sandbox.commands).toEqual([]);
    expect(blocksOf(result.messages, -1)[0]).toMatchObject({ tool_use_id: "t2", is_error: true });
    assertValidConversation(result.messages);
  });

  it("any other stop reason resets the max_tokens count", async () => {
    const { run } = fixture([
      response([text("a")], "max_tokens"),
      response([text("b")], "max_tokens"),
      toolCalls(bash("t1", "ls")),
      response([text("c")], "max_tokens"),
      response([text("d")], "max_tokens"),
      answer("done"),
    ]);
    const result = await run();
    expect(result).toMatchObject({ status: "submitted", turns: 6 });
    assertValidConversation(result.messages);
  });

  it("refusal ends the run with status refusal and a notice", async () => {
    const { run, notices } = fixture([response([text("I can't help with that.")], "refusal")]);
    const result = await run();
    expect(result).toMatchObject({ status: "refusal", finalText: "I can't help with that." });
    expect(notices()).toContain("The model declined to continue (stop reason: refusal).");
    assertValidConversation(result.messages);
  });

  it("refusal in the middle of a tool call leaves that call answered, not run", async () => {
    const { run, sandbox } = fixture([response([bash("t1", "ls")], "refusal")]);
    const result = await run();
    expect(result.status).toBe("refusal");
    expect(sandbox.commands).toEqual([]);
    expect(blocksOf(result.messages, -1)[0]).toMatchObject({
      type: "tool_result",
      tool_use_id: "t1",
      is_error: true,
    });
    assertValidConversation(result.messages);
  });

  it("model_context_window_exceeded ends the run with context_window", async () => {
    const { run } = fixture([
      toolCalls(bash("t1", "cat big")),
      response([text("partial")], "model_context_window_exceeded"),
    ]);
    const result = await run();
    expect(result).toMatchObject({ status: "context_window", turns: 2 });
    assertValidConversation(result.messages);
  });

  it("an API 400 saying the prompt is too long also ends with context_window", async () => {
    const tooLong = new ModelError("400 prompt is too long: 210000 tokens > 200000 maximum", { status: 400 });
    const { run } = fixture([tooLong]);
    const result = await run();
    expect(result.status).toBe("context_window");
    expect(result.error).toBe(tooLong);
  });

  it("a response without a stop reason is an error, not a success", async () => {
    const { run } = fixture([response([text("half an ans")], null)]);
    const result = await run();
    expect(result.status).toBe("error");
    expect(result.error?.message).toMatch(/unexpected stop reason: null/);
    assertValidConversation(result.messages);
  });

  it("an empty final answer is not stored as an empty message", async () => {
    const { run } = fixture([toolCalls(bash("t1", "ls")), response([text("")], "end_turn")]);
    const result = await run();
    expect(result).toMatchObject({ status: "submitted", finalText: "" });
    expect(result.messages.at(-1)?.role).toBe("user");
    assertValidConversation(result.messages);
  });
});
