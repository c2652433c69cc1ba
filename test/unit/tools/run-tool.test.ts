import { describe, expect, it } from "vitest";
import { SandboxError } from "../../../src/errors.js";
import { executeToolCall, runToolCall } from "../../../src/tools/run-tool.js";
import { type Tool, ToolError } from "../../../src/tools/tool.js";

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

describe("runToolCall", () => {
  it("runs the tool with the parsed input and answers the call's id", async () => {
    const result = await runToolCall([echoTool()], { id: "t1", name: "echo", input: { text: "hi" } }, {});
    expect(result).toEqual({ toolUseId: "t1", content: "hi", isError: false });
  });

  it("answers an unknown tool with an error result", async () => {
    const result = await runToolCall([echoTool()], { id: "t2", name: "python", input: {} }, {});
    expect(result).toEqual({ toolUseId: "t2", content: "Error: Tool 'python' not found", isError: true });
  });

  it("returns a ToolError's message from parse as is", async () => {
    const result = await runToolCall([echoTool()], { id: "t3", name: "echo", input: { text: 1 } }, {});
    expect(result).toEqual({ toolUseId: "t3", content: "Error: `text` must be a string.", isError: true });
  });

  it("turns anything else thrown into `Error: <message>`", async () => {
    const tool = echoTool({
      run: async () => {
        throw new TypeError("boom");
      },
    });
    const result = await runToolCall([tool], { id: "t4", name: "echo", input: { text: "x" } }, {});
    expect(result).toEqual({ toolUseId: "t4", content: "Error: boom", isError: true });
  });

  it("copes with non-Error throws and empty output", async () => {
    const throwsString = echoTool({
      parse: () => {
        throw "bad";
      },
    });
    expect((await runToolCall([throwsString], { id: "a", name: "echo", input: {} }, {})).content).toBe(
      "Error: bad",
    );
    const silent = echoTool({ run: async () => ({ content: "", isError: false }) });
    const result = await runToolCall([silent], { id: "b", name: "echo", input: { text: "" } }, {});
    expect(result.content).toBe("(no output)");
  });

  it("passes the context to the tool", async () => {
    const controller = new AbortController();
    let seen: AbortSignal | undefined;
    const tool = echoTool({
      run: async (_input, context) => {
        seen = context.signal;
        return { content: "ok", isError: false };
      },
    });
    await runToolCall([tool], { id: "c", name: "echo", input: { text: "x" } }, { signal: controller.signal });
    expect(seen).toBe(controller.signal);
  });

  it("hands back what was thrown so the loop can spot a dead sandbox", async () => {
    const failure = new SandboxError("container gone", { containerId: "abc" });
    const tool = echoTool({
      run: async () => {
        throw failure;
      },
    });
    const outcome = await executeToolCall([tool], { id: "d", name: "echo", input: { text: "x" } }, {});
    expect(outcome.thrown).toBe(failure);
    expect(outcome.result).toEqual({ toolUseId: "d", content: "Error: container gone", isError: true });
  });
});
