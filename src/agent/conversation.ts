/**
 * Small operations on the message list that keep it a valid conversation for the next request:
 * roles alternate, starting with "user"; every `tool_use` is answered by a `tool_result` at the start
 * of the next user message; no message or text block is empty.
 */
import type { ContentBlock, MessageParam } from "../model/model-client.js";
import type { ToolCall, ToolResult } from "../tools/tool.js";

export type ContentBlockParam = Exclude<MessageParam["content"], string>[number];
export type ToolUseBlock = Extract<ContentBlock, { type: "tool_use" }>;
export type ToolResultBlockParam = Extract<ContentBlockParam, { type: "tool_result" }>;

/** Appends user content; merges into the last message if it is already a user message. */
export function appendUserBlocks(messages: MessageParam[], blocks: ContentBlockParam[]): void {
  if (blocks.length === 0) return;
  const last = messages.at(-1);
  if (last?.role === "user") {
    const existing: ContentBlockParam[] =
      typeof last.content === "string" ? [{ type: "text", text: last.content }] : last.content;
    messages[messages.length - 1] = { role: "user", content: [...existing, ...blocks] };
  } else {
    messages.push({ role: "user", content: blocks });
  }
}

/**
 * Appends user text. After a cancelled run the conversation can end with a user message (tool results,
 * or a task the model never answered); merging keeps the roles alternating.
 */
export function appendUserText(messages: MessageParam[], text: string): void {
  appendUserBlocks(messages, [{ type: "text", text }]);
}

/**
 * Appends a whole assistant turn. Empty text blocks are dropped (the API rejects them) and an empty
 * turn is not stored. After `pause_turn` the continuation is merged into the paused turn, which is
 * what the API does with consecutive assistant messages anyway.
 */
export function appendAssistant(messages: MessageParam[], content: readonly ContentBlock[]): void {
  const kept = content.filter((block) => !(block.type === "text" && block.text === ""));
  if (kept.length === 0) return;
  const last = messages.at(-1);
  if (last?.role === "assistant" && typeof last.content !== "string") {
    messages[messages.length - 1] = { role: "assistant", content: [...last.content, ...kept] };
  } else {
    messages.push({ role: "assistant", content: kept });
  }
}

/** The `tool_use` blocks of a response, in order. */
export function toolUses(content: readonly ContentBlock[]): ToolUseBlock[] {
  return content.filter((block): block is ToolUseBlock => block.type === "tool_use");
}

/** The text blocks of a response, joined. */
export function textOf(content: readonly ContentBlock[]): string {
  return content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

/** A `tool_result` block for the API; `is_error` only when set, as the API documents it. */
export function toolResultBlock(result: ToolResult): ToolResultBlockParam {
  const block: ToolResultBlockParam = {
    type: "tool_result",
    tool_use_id: result.toolUseId,
    content: result.content,
  };
  if (result.isError) block.is_error = true;
  return block;
}

/** `tool_use` blocks of the final assistant message, when nothing answers them yet. */
export function unansweredToolUses(messages: readonly MessageParam[]): ToolCall[] {
  const last = messages.at(-1);
  if (last?.role !== "assistant" || typeof last.content === "string") return [];
  return last.content.flatMap((block) =>
    block.type === "tool_use" ? [{ id: block.id, name: block.name, input: block.input }] : [],
  );
}
