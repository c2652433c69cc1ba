import { describe, expect, it } from "vitest";
import { guardEvents } from "../../../src/agent/events.js";
import { runToolCalls } from "../../../src/agent/tool-turn.js";
import { SandboxError } from "../../../src/errors.js";
import { type Tool, type ToolCall, ToolError, type ToolResult } from "../../../src/tools/tool.js";

function echoTool(overrides: Partial<Tool<{ text: string }>> = {}): Tool<{ text: string }> {
  return {
    definition: {
      name: "echo",
      description: "Echoes text.",
      inputSchema: { type: "object", properties: {} },
    },
    parse(input) {
      const text = (input as { text?: unknown } | null)?.text;
      if (typeof text !== "string") throw new ToolError("Error: `text` must be a string.");
      return { text };
    },
    async run(input) {
      return { content: input.text, isError: false };
    },
    ...overrides,
  };
}

/** The one result of running `call` alone. */
async function runOne(tools: readonly Tool[], call: ToolCall, signal?: AbortSignal): Promise<ToolResult> {
  const { results } = await runToolCalls([call], { tools, events: guardEvents(undefined), signal });
  expect(results).toHaveLength(1);
  return results[0] as ToolResult;
}

describe("runToolCalls", () => {
  it("runs the tool with the parsed input and answers the call's id", async () => {
    const result = await runOne([echoTool()], { id: "t1", name: "echo", input: { text: "hi" } });
    expect(result).toEqual({ toolUseId: "t1", content: "hi", isError: false });
  });

  it("answers an unknown tool with an error result", async () => {
    const result = await runOne([echoTool()], { id: "t2", name: "python", input: {} });
    expect(result).toEqual({ toolUseId: "t2", content: "Error: Tool 'python' not found", isError: true });
  });

  it("returns a ToolError's message from parse as is", async () => {
    const result = await runOne([echoTool()], { id: "t3", name: "echo", input: { text: 1 } });
    expect(result).toEqual({ toolUseId: "t3", content: "Error: `text` must be a string.", isError: true });
  });

  it("turns anything else thrown into `Error: <message>`", async () => {
    const tool = echoTool({
      run: async () => {
        throw new TypeError("boom");
      },
    });
    const result = await runOne([tool], { id: "t4", name: "echo", input: { text: "x" } });
    expect(result).toEqual({ toolUseId: "t4", content: "Error: boom", isError: true });
  });

  it("copes with non-Error throws and empty output", async () => {
    const throwsString = echoTool({
      parse: () => {
        throw "bad";
      },
    });
    expect((await runOne([throwsString], { id: "a", name: "echo", input: {} })).content).toBe("Error: bad");
    const silent = echoTool({ run: async () => ({ content: "", isError: false }) });
    const result = await runOne([silent], { id: "b", name: "echo", input: { text: "" } });
    expect(result.content).toBe("(no output)");
  });

  it("passes the signal and a live output callback to the tool", async () => {
    const controller = new AbortController();
    let seen: AbortSignal | undefined;
    const chunks: string[] = [];
    const tool = echoTool({
      run: async (_input, context) => {
        seen = context.signal;
        context.onOutput?.("stdout", Buffer.from("live"));
        return { content: "ok", isError: false };
      },
    });
    await runToolCalls([{ id: "c", name: "echo", input: { text: "x" } }], {
      tools: [tool],
      events: guardEvents({ onToolOutput: (call, _stream, chunk) => chunks.push(`${call.id}:${chunk}`) }),
      signal: controller.signal,
    });
    expect(seen).toBe(controller.signal);
    expect(chunks).toEqual(["c:live"]);
  });

  it("answers every call in order with its own id", async () => {
    const calls = [
      { id: "x1", name: "echo", input: { text: "one" } },
      { id: "x2", name: "nope", input: {} },
      { id: "x3", name: "echo", input: { text: "three" } },
    ];
    const { results } = await runToolCalls(calls, { tools: [echoTool()], events: guardEvents(undefined) });
    expect(results.map((r) => [r.toolUseId, r.content])).toEqual([
      ["x1", "one"],
      ["x2", "Error: Tool 'nope' not found"],
      ["x3", "three"],
    ]);
  });

  it("ends the turn on a dead sandbox: the error is fatal and later calls are not run", async () => {
    const failure = new SandboxError("container gone", { containerId: "abc" });
    let runs = 0;
    const tool = echoTool({
      run: async () => {
        runs += 1;
        throw failure;
      },
    });
    const outcome = await runToolCalls(
      [
        { id: "d", name: "echo", input: { text: "x" } },
        { id: "e", name: "echo", input: { text: "y" } },
      ],
      { tools: [tool], events: guardEvents(undefined) },
    );
    expect(runs).toBe(1);
    expect(outcome.fatal).toBe(failure);
    expect(outcome.results[0]).toEqual({ toolUseId: "d", content: "Error: container gone", isError: true });
    expect(outcome.results[1]).toMatchObject({ toolUseId: "e", isError: true });
    expect(outcome.results[1]?.content).toMatch(
      /the sandbox failed \(container gone\); this tool call was not run/,
    );
  });
});
