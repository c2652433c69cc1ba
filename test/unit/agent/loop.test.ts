import { describe, expect, it } from "vitest";
import type { Tool } from "../../../src/tools/tool.js";
import { blocksOf, fixture } from "../../support/agent-fixture.js";
import { FakeSandbox } from "../../support/fake-sandbox.js";
import { answer, bash, text, toolCalls, toolUse } from "../../support/scripted-model.js";
import { assertValidConversation } from "../../support/validate-conversation.js";

describe("runAgent: the basic loop", () => {
  it("runs the tool the model asks for, sends the result back, and ends when the model answers", async () => {
    const sandbox = new FakeSandbox([{ stdout: "a.txt\n" }]);
    const { run, model, log } = fixture(
      [toolCalls(text("Looking."), bash("t1", "ls")), answer("Done: a.txt")],
      {
        sandbox,
      },
    );
    const result = await run("List the files.");

    expect(result.status).toBe("submitted");
    expect(result.turns).toBe(2);
    expect(result.finalText).toBe("Done: a.txt");
    expect(sandbox.commands).toEqual(["ls"]);
    expect(result.messages.map((message) => message.role)).toEqual([
      "user",
      "assistant",
      "user",
      "assistant",
    ]);
    expect(blocksOf(result.messages, 0)).toEqual([{ type: "text", text: "List the files." }]);
    expect(blocksOf(result.messages, 1).map((block) => block.type)).toEqual(["text", "tool_use"]);
    expect(blocksOf(result.messages, 2)).toEqual([
      {
        type: "tool_result",
        tool_use_id: "t1",
        content: "<stdout>\na.txt\n</stdout>\n<exit_code>0</exit_code>",
      },
    ]);
    assertValidConversation(result.messages);

    expect(model.requests).toHaveLength(2);
    expect(model.requests[0]).toMatchObject({ system: "You are a test agent.", maxTokens: 1000 });
    expect(model.requests[0]?.tools.map((tool) => tool.name)).toEqual(["bash"]);
    expect(model.requests[1]?.messages).toEqual(result.messages.slice(0, 3));
    const streamed = log.filter(([name]) => name === "onText").map(([, delta]) => delta);
    expect(streamed.join("")).toBe("Looking.Done: a.txt");
  });

  it("sums token usage over the run", async () => {
    const { run } = fixture([
      toolCalls(bash("t1", "ls")),
      answer("ok", {
        inputTokens: 100,
        outputTokens: 7,
        cacheReadInputTokens: 50,
        cacheCreationInputTokens: 3,
      }),
    ]);
    const result = await run();
    expect(result.usage).toEqual({
      inputTokens: 110,
      outputTokens: 12,
      cacheReadInputTokens: 50,
      cacheCreationInputTokens: 3,
    });
  });

  it("runs several tool calls of one response in order and answers them all in one user message", async () => {
    const sandbox = new FakeSandbox([{ stdout: "1" }, { stderr: "boom", exitCode: 1 }, { stdout: "3" }]);
    const { run } = fixture(
      [toolCalls(bash("a", "echo 1"), bash("b", "false"), bash("c", "echo 3")), answer("done")],
      { sandbox },
    );
    const result = await run();
    expect(sandbox.commands).toEqual(["echo 1", "false", "echo 3"]);
    const results = blocksOf(result.messages, 2);
    expect(results.map((block) => (block.type === "tool_result" ? block.tool_use_id : block.type))).toEqual([
      "a",
      "b",
      "c",
    ]);
    expect(results.map((block) => (block.type === "tool_result" ? (block.is_error ?? false) : null))).toEqual(
      [false, true, false],
    );
    expect(result.messages).toHaveLength(4);
    assertValidConversation(result.messages);
  });

  it("answers an unknown tool and bad input with error results, and carries on", async () => {
    const { run, sandbox } = fixture([
      toolCalls(toolUse("x", "python", { code: "1" }), toolUse("y", "bash", { cmd: "ls" }), bash("z", "pwd")),
      answer("done"),
    ]);
    const result = await run();
    expect(result.status).toBe("submitted");
    expect(sandbox.commands).toEqual(["pwd"]);
    expect(blocksOf(result.messages, 2).slice(0, 2)).toEqual([
      { type: "tool_result", tool_use_id: "x", content: "Error: Tool 'python' not found", is_error: true },
      {
        type: "tool_result",
        tool_use_id: "y",
        content: "Error: `command` must be a non-empty string.",
        is_error: true,
      },
    ]);
    assertValidConversation(result.messages);
  });

  it("answers a tool that throws with an error result instead of crashing", async () => {
    const broken: Tool = {
      definition: { name: "broken", description: "", inputSchema: { type: "object", properties: {} } },
      parse: (input) => input,
      run: async () => {
        throw new Error("disk on fire");
      },
    };
    const { run } = fixture([toolCalls(toolUse("b1", "broken", {})), answer("ok")], { tools: [broken] });
    const result = await run();
    expect(result.status).toBe("submitted");
    expect(blocksOf(result.messages, 2)).toEqual([
      { type: "tool_result", tool_use_id: "b1", content: "Error: disk on fire", is_error: true },
    ]);
  });

  it("does not run a blocked command and tells the model why", async () => {
    const { run, sandbox } = fixture([toolCalls(bash("s", "sudo rm -rf /")), answer("ok")]);
    const result = await run();
    expect(sandbox.commands).toEqual([]);
    const [block] = blocksOf(result.messages, 2);
    expect(block).toMatchObject({ type: "tool_result", tool_use_id: "s", is_error: true });
    expect(block?.type === "tool_result" && block.content).toMatch(/^Blocked: .*privilege-escalation/);
  });

  it("sends a timed-out command's partial output and a note to the model", async () => {
    const sandbox = new FakeSandbox([
      {
        stdout: "compiling…\n",
        exitCode: undefined,
        timedOut: true,
        shortMessage: "Command timed out after 1000 milliseconds",
      },
    ]);
    const { run } = fixture([toolCalls(bash("t", "make")), answer("too slow")], { sandbox });
    const result = await run();
    const [block] = blocksOf(result.messages, 2);
    expect(block).toMatchObject({ type: "tool_result", is_error: true });
    const content = block?.type === "tool_result" ? String(block.content) : "";
    expect(content).toContain("compiling…");
    expect(content).toContain("Command timed out after 1000 milliseconds; it was killed.");
  });

  it("carries a REPL's history into the next run without changing it", async () => {
    const { run, model } = fixture([toolCalls(bash("t1", "ls")), answer("first"), answer("second")]);
    const first = await run("one");
    const snapshot = structuredClone(first.messages);
    const second = await run("two", first.messages);

    expect(first.messages).toEqual(snapshot);
    expect(second.status).toBe("submitted");
    expect(second.turns).toBe(1);
    expect(second.finalText).toBe("second");
    expect(model.requests[2]?.messages).toEqual([
      ...snapshot,
      { role: "user", content: [{ type: "text", text: "two" }] },
    ]);
    expect(second.messages).toHaveLength(snapshot.length + 2);
    assertValidConversation(second.messages);
  });

  it("emits events in order, with one run end", async () => {
    const { run, eventNames } = fixture([toolCalls(bash("t1", "ls")), answer("ok")]);
    await run();
    expect(eventNames().filter((name) => name !== "onText")).toEqual([
      "onRunStart",
      "onUserMessage",
      "onTurnUsage",
      "onAssistantTurn",
      "onToolCall",
      "onToolResult",
      "onTurnUsage",
      "onAssistantTurn",
      "onRunEnd",
    ]);
  });

  it("is not crashed by listeners that throw or reject", async () => {
    const thrower = () => {
      throw new Error("listener bug");
    };
    const rejecter = async () => {
      throw new Error("async listener bug");
    };
    const events = {
      onRunStart: thrower,
      onUserMessage: rejecter,
      onText: thrower,
      onAssistantTurn: rejecter,
      onToolCall: thrower,
      onToolResult: thrower,
      onTurnUsage: thrower,
      onNotice: thrower,
      onRunEnd: thrower,
    };
    const { run, eventNames } = fixture([toolCalls(bash("t1", "ls")), answer("ok")], { events });
    const result = await run();
    expect(result.status).toBe("submitted");
    expect(eventNames()).toContain("onRunEnd");
  });
});
