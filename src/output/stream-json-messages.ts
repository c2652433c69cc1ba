/**
 * The `assistant` and tool-result `user` lines of stream-json, in the shapes Claude Code uses (the API's
 * `Message`; a user message of `tool_result` blocks), plus harness's `harness` object on tool results.
 */
import type { ContentBlock, ModelResponse } from "../model/model-client.js";
import type { ToolCall, ToolResult } from "../tools/tool.js";
import { type ApiUsage, apiUsage } from "./result-summary.js";

/** What harness knows about one tool result beyond the API's `tool_result` block. */
export interface ToolRunFacts {
  /** The tool that was called, e.g. "bash". */
  tool_name: string;
  /** False when the call never ran a command: blocked, invalid input, cancelled or skipped. */
  ran: boolean;
  /** The command's exit code; null when it did not run or was killed without one. */
  exit_code: number | null;
  /** How long the command took, in ms; null when it did not run. */
  duration_ms: number | null;
  /** Killed at its timeout. */
  timed_out: boolean;
  /** Killed because the user interrupted (Ctrl-C). */
  canceled: boolean;
  /** A process of the command was killed by the out-of-memory killer. */
  oom_killed: boolean;
  /** Output was cut to fit the cap (head and tail kept). */
  truncated: boolean;
}

/** An assistant turn in the Messages API's `Message` shape, as Claude Code's `assistant` lines carry it. */
export interface ApiMessage {
  /** The API's message id. */
  id: string;
  type: "message";
  role: "assistant";
  /** The model that answered. */
  model: string;
  /** The whole turn: text, tool_use and any other blocks, in order. */
  content: ContentBlock[];
  /** Why the model stopped. */
  stop_reason: string | null;
  /** Tokens of this response. */
  usage: ApiUsage;
}

export function assistantMessage(response: ModelResponse): ApiMessage {
  return {
    id: response.id,
    type: "message",
    role: "assistant",
    model: response.model,
    content: response.content,
    stop_reason: response.stopReason,
    usage: apiUsage(response.usage),
  };
}

function toolRunFacts(call: ToolCall, result: ToolResult): ToolRunFacts {
  const exec = result.exec;
  return {
    tool_name: call.name,
    ran: exec !== undefined,
    exit_code: exec?.exitCode ?? null,
    duration_ms: exec === undefined ? null : Math.round(exec.durationMs),
    timed_out: exec?.timedOut ?? false,
    canceled: exec?.isCanceled ?? false,
    oom_killed: exec?.oomKilled ?? false,
    truncated: exec?.isTruncated ?? false,
  };
}

/** A tool result as a `user` line: the block the model receives, and what harness saw of the command. */
export function toolResultMessage(call: ToolCall, result: ToolResult) {
  const block = {
    type: "tool_result",
    tool_use_id: result.toolUseId,
    content: result.content,
    is_error: result.isError,
  };
  return { type: "user", message: { role: "user", content: [block] }, harness: toolRunFacts(call, result) };
}
