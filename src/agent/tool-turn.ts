/**
 * Answers every tool call of one assistant turn, in order (calls of one response run one after
 * another, never in parallel). Every call gets a `tool_result` whatever its tool does: an unknown
 * tool, a `ToolError` (from `parse` or `run`) or anything else thrown becomes an `isError` result the
 * model can read.
 */
import { type HarnessError, SandboxError } from "../errors.js";
import {
  type Tool,
  type ToolCall,
  type ToolContext,
  ToolError,
  type ToolOutput,
  type ToolResult,
} from "../tools/tool.js";
import type { StepCheckpoints } from "./agent-types.js";
import type { AgentEvents } from "./events.js";

export const CANCELED_TEXT = "Error: cancelled by user; this tool call was not run.";

export interface ToolTurnOptions {
  tools: readonly Tool[];
  events: Required<AgentEvents>;
  signal?: AbortSignal | undefined;
  /** Calls to answer with the given error text instead of running them (e.g. cut off at max_tokens). */
  skip?: ReadonlyMap<string, string>;
  /** Answer every call with this error text and run none (the run is ending). */
  skipAll?: string;
  /** Told of each answered call (its checkpoint), and settled before the next one runs. */
  checkpoints?: StepCheckpoints | undefined;
}

export interface ToolTurnOutcome {
  /** One result per call, in the calls' order. */
  results: ToolResult[];
  /** The user cancelled: the running command was killed and later calls were not run. */
  canceled: boolean;
  /** The sandbox failed for good: later calls were not run and the run must end with status "error". */
  fatal?: HarnessError;
}

/** Contract: never rejects; what a tool throws is in its result (and a `SandboxError` in `fatal`). */
export async function runToolCalls(
  calls: readonly ToolCall[],
  options: ToolTurnOptions,
): Promise<ToolTurnOutcome> {
  const { events, signal } = options;
  const results: ToolResult[] = [];
  let fatal: HarnessError | undefined;
  for (const call of calls) {
    // The previous step's snapshot is taken before this call can change the workspace.
    await options.checkpoints?.settle().catch(() => undefined);
    events.onToolCall(call);
    const notRun = options.skipAll ?? notRunText(call, options, fatal);
    const tool = options.tools.find((candidate) => candidate.definition.name === call.name);
    let result: ToolResult;
    if (notRun !== undefined) result = errorResult(call, notRun);
    else if (tool === undefined) result = errorResult(call, `Error: Tool '${call.name}' not found`);
    else {
      const onOutput = (stream: "stdout" | "stderr", chunk: Buffer) =>
        events.onToolOutput(call, stream, chunk);
      const context: ToolContext = { callId: call.id, onOutput };
      if (signal !== undefined) context.signal = signal;
      try {
        result = toolResult(call, await tool.run(tool.parse(call.input), context));
      } catch (error) {
        result = errorResult(call, errorText(error));
        // The run ends instead of letting the model retry against a dead container.
        if (error instanceof SandboxError) fatal = error;
      }
    }
    events.onToolResult(call, result);
    results.push(result);
    options.checkpoints?.afterToolCall(call, result);
  }
  const outcome: ToolTurnOutcome = { results, canceled: signal?.aborted === true };
  if (fatal !== undefined) outcome.fatal = fatal;
  return outcome;
}

function notRunText(
  call: ToolCall,
  options: ToolTurnOptions,
  fatal: HarnessError | undefined,
): string | undefined {
  if (options.signal?.aborted) return CANCELED_TEXT;
  if (fatal !== undefined) return `Error: the sandbox failed (${fatal.message}); this tool call was not run.`;
  return options.skip?.get(call.id);
}

function toolResult(call: ToolCall, output: ToolOutput): ToolResult {
  const result: ToolResult = {
    toolUseId: call.id,
    // The API rejects an empty tool_result text; say so instead.
    content: output.content === "" ? "(no output)" : output.content,
    isError: output.isError,
  };
  if (output.exec !== undefined) result.exec = output.exec;
  if (output.outputId !== undefined) result.outputId = output.outputId;
  return result;
}

function errorResult(call: ToolCall, content: string): ToolResult {
  return { toolUseId: call.id, content, isError: true };
}

function errorText(error: unknown): string {
  if (error instanceof ToolError) return error.message;
  if (error instanceof Error) return `Error: ${error.message}`;
  return `Error: ${String(error)}`;
}
