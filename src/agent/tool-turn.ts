/**
 * Answers every tool call of one assistant turn, in order (the seed's `for block in response.content`;
 * calls of one response run one after another, never in parallel).
 */
import { type HarnessError, SandboxError } from "../errors.js";
import { executeToolCall } from "../tools/run-tool.js";
import type { Tool, ToolCall, ToolResult } from "../tools/tool.js";
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
}

export interface ToolTurnOutcome {
  /** One result per call, in the calls' order. */
  results: ToolResult[];
  /** The user cancelled: the running command was killed and later calls were not run. */
  canceled: boolean;
  /** The sandbox failed for good: later calls were not run and the run must end with status "error". */
  fatal?: HarnessError;
}

export async function runToolCalls(
  calls: readonly ToolCall[],
  options: ToolTurnOptions,
): Promise<ToolTurnOutcome> {
  const { events, signal } = options;
  const results: ToolResult[] = [];
  let fatal: HarnessError | undefined;
  for (const call of calls) {
    events.onToolCall(call);
    const notRun = options.skipAll ?? notRunText(call, options, fatal);
    let result: ToolResult;
    if (notRun !== undefined) {
      result = { toolUseId: call.id, content: notRun, isError: true };
    } else {
      const onOutput = (stream: "stdout" | "stderr", chunk: Buffer) =>
        events.onToolOutput(call, stream, chunk);
      const context = signal === undefined ? { onOutput } : { signal, onOutput };
      const outcome = await executeToolCall(options.tools, call, context);
      result = outcome.result;
      if (outcome.thrown instanceof SandboxError) fatal = outcome.thrown;
    }
    events.onToolResult(call, result);
    results.push(result);
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
