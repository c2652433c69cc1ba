import { describe, expect, it } from "vitest";
import { CANCELED_TEXT } from "../../../src/agent/tool-turn.js";
import { HarnessError, ModelError, SandboxError } from "../../../src/errors.js";
import { blocksOf, fixture } from "../../support/agent-fixture.js";
import { FakeSandbox, hang } from "../../support/fake-sandbox.js";
import { answer, bash, hangUntilAborted, toolCalls } from "../../support/scripted-model.js";
import { assertValidConversation } from "../../support/validate-conversation.js";

const forever = (n: number) => Array.from({ length: n }, (_, i) => toolCalls(bash(`t${i}`, `echo ${i}`)));

describe("runAgent: limits", () => {
  it("stops at maxTurns with step_limit, after answering the last tool calls", async () => {
    const { run, model, sandbox, notices } = fixture(forever(5), { limits: { maxTurns: 2 } });
    const result = await run();
    expect(result).toMatchObject({ status: "step_limit", turns: 2 });
    expect(model.requests).toHaveLength(2);
    expect(sandbox.commands).toEqual(["echo 0", "echo 1"]);
    expect(notices()).toContain("Stopped: reached the turn limit (2 model calls).");
    assertValidConversation(result.messages);
  });

  it("stops with cost_limit when the run's token budget is used up", async () => {
    // Each scripted response costs 10 input + 5 output = 15 tokens.
    const { run, model, notices } = fixture(forever(5), { limits: { maxTotalTokens: 40 } });
    const result = await run();
    expect(result).toMatchObject({ status: "cost_limit", turns: 3 });
    expect(model.requests).toHaveLength(3);
    expect(notices().join()).toContain("token budget used up (45 of 40 tokens)");
    assertValidConversation(result.messages);
  });

  it("counts cache reads and writes in the budget", async () => {
    const { run } = fixture([toolCalls(bash("t", "ls")), answer("never")], {
      limits: { maxTotalTokens: 1000 },
    });
    const heavy = fixture(
      [
        {
          ...toolCalls(bash("t", "ls")),
          usage: {
            inputTokens: 1,
            outputTokens: 1,
            cacheReadInputTokens: 900,
            cacheCreationInputTokens: 100,
          },
        },
        answer("never"),
      ],
      { limits: { maxTotalTokens: 1000 } },
    );
    expect((await run()).status).toBe("submitted");
    expect((await heavy.run()).status).toBe("cost_limit");
  });
});

describe("runAgent: failures", () => {
  it("ends with status error and keeps the ModelError", async () => {
    const failure = new ModelError("529 overloaded", { status: 529, requestID: "req_1" });
    const { run } = fixture([toolCalls(bash("t1", "ls")), failure]);
    const result = await run();
    expect(result).toMatchObject({ status: "error", turns: 2 });
    expect(result.error).toBe(failure);
    expect(result.messages.at(-1)?.role).toBe("user");
    assertValidConversation(result.messages);
  });

  it("wraps anything else a broken model client throws", async () => {
    const { run } = fixture([new TypeError("undefined is not a function")]);
    const result = await run();
    expect(result.status).toBe("error");
    expect(result.error).toBeInstanceOf(HarnessError);
    expect(result.error?.message).toBe("The model client failed: undefined is not a function");
  });

  it("ends with status error when the sandbox fails for good, without running later calls", async () => {
    const gone = new SandboxError("container abc is gone", { containerId: "abc" });
    const sandbox = new FakeSandbox([gone]);
    const { run } = fixture([toolCalls(bash("t1", "ls"), bash("t2", "pwd")), answer("never")], { sandbox });
    const result = await run();
    expect(result.status).toBe("error");
    expect(result.error).toBe(gone);
    expect(sandbox.commands).toEqual(["ls"]);
    expect(blocksOf(result.messages, 2)).toEqual([
      { type: "tool_result", tool_use_id: "t1", content: "Error: container abc is gone", is_error: true },
      {
        type: "tool_result",
        tool_use_id: "t2",
        content: "Error: the sandbox failed (container abc is gone); this tool call was not run.",
        is_error: true,
      },
    ]);
    assertValidConversation(result.messages);
  });
});

describe("runAgent: cancel", () => {
  it("kills the running command, answers every call, and ends as canceled", async () => {
    const controller = new AbortController();
    const sandbox = new FakeSandbox([
      (command, options) => {
        setTimeout(() => controller.abort(), 5);
        return hang(command, options);
      },
    ]);
    const { run, model } = fixture([toolCalls(bash("t1", "sleep 100"), bash("t2", "ls")), answer("never")], {
      sandbox,
      signal: controller.signal,
    });
    const result = await run();
    expect(result).toMatchObject({ status: "canceled", turns: 1 });
    expect(model.requests).toHaveLength(1);
    expect(sandbox.commands).toEqual(["sleep 100"]);
    const [first, second] = blocksOf(result.messages, 2);
    expect(first).toMatchObject({ tool_use_id: "t1", is_error: true });
    expect(first?.type === "tool_result" && first.content).toContain("cancelled by the user");
    expect(second).toEqual({
      type: "tool_result",
      tool_use_id: "t2",
      content: CANCELED_TEXT,
      is_error: true,
    });
    assertValidConversation(result.messages);
  });

  it("stops waiting for the model when cancelled mid-request", async () => {
    const controller = new AbortController();
    const { run } = fixture(
      [
        () => {
          setTimeout(() => controller.abort(), 5);
          return hangUntilAborted();
        },
      ],
      { signal: controller.signal },
    );
    const result = await run();
    expect(result).toMatchObject({ status: "canceled", turns: 1 });
    expect(result.messages).toEqual([{ role: "user", content: [{ type: "text", text: "Fix the build." }] }]);
  });

  it("does not call the model when already cancelled", async () => {
    const controller = new AbortController();
    controller.abort();
    const { run, model } = fixture([answer("never")], { signal: controller.signal });
    const result = await run();
    expect(result).toMatchObject({ status: "canceled", turns: 0 });
    expect(model.requests).toHaveLength(0);
  });

  it("leaves a conversation the next REPL prompt can continue", async () => {
    const controller = new AbortController();
    const sandbox = new FakeSandbox([
      (command, options) => {
        controller.abort();
        return hang(command, options);
      },
    ]);
    const first = fixture([toolCalls(bash("t1", "sleep 100"))], { sandbox, signal: controller.signal });
    const cancelled = await first.run("one");
    expect(cancelled.status).toBe("canceled");

    const next = fixture([answer("continuing")]);
    const result = await next.run("two", cancelled.messages);
    expect(result.status).toBe("submitted");
    // The new prompt joins the tool results' user message: roles keep alternating.
    expect(blocksOf(result.messages, 2).map((block) => block.type)).toEqual(["tool_result", "text"]);
    assertValidConversation(result.messages);
  });
});
