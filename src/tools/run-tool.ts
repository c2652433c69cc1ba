/**
 * Runs one tool call and always produces a `tool_result`, whatever the tool does.
 * Anchors: anthropic-sdk-typescript `src/lib/tools/BetaToolRunner.ts` (`generateToolResponse`,
 * `toolNotFoundResult`); pi-mono `agent-loop.ts` (`createErrorToolResult`).
 */
import { type Tool, type ToolCall, type ToolContext, ToolError, type ToolResult } from "./tool.js";

/** A tool call's result, plus what the tool threw (if it threw) so the caller can tell infrastructure failures apart. */
export interface ToolCallOutcome {
  /** The result to send back to the model. */
  result: ToolResult;
  /** What the tool's `parse` or `run` threw, when it threw; `undefined` otherwise. */
  thrown?: unknown;
}

/**
 * Like `runToolCall`, but also hands back what was thrown: the loop ends the run on a `SandboxError`
 * instead of letting the model retry against a dead container.
 * Contract: never rejects.
 */
export async function executeToolCall(
  tools: readonly Tool[],
  call: ToolCall,
  context: ToolContext,
): Promise<ToolCallOutcome> {
  const tool = tools.find((candidate) => candidate.definition.name === call.name);
  if (tool === undefined) {
    return { result: errorResult(call, `Error: Tool '${call.name}' not found`) };
  }
  try {
    const input = tool.parse(call.input);
    const output = await tool.run(input, context);
    const result: ToolResult = {
      toolUseId: call.id,
      // The API rejects an empty tool_result text; say so instead.
      content: output.content === "" ? "(no output)" : output.content,
      isError: output.isError,
    };
    if (output.exec !== undefined) result.exec = output.exec;
    return { result };
  } catch (error) {
    return { result: errorResult(call, errorText(error)), thrown: error };
  }
}

/**
 * Runs `call` with the tool of the same name. An unknown tool, a `ToolError` (from `parse` or `run`) or
 * anything else thrown becomes an `isError` result the model can read.
 * Contract: never rejects.
 */
export async function runToolCall(
  tools: readonly Tool[],
  call: ToolCall,
  context: ToolContext,
): Promise<ToolResult> {
  return (await executeToolCall(tools, call, context)).result;
}

function errorResult(call: ToolCall, content: string): ToolResult {
  return { toolUseId: call.id, content, isError: true };
}

function errorText(error: unknown): string {
  if (error instanceof ToolError) return error.message;
  if (error instanceof Error) return `Error: ${error.message}`;
  return `Error: ${String(error)}`;
}
