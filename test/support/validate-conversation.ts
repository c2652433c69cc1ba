/**
 * Checks a message list the way the Messages API does before it accepts a request, so tests catch a
 * conversation the real API would reject with a 400.
 * Rules from the API docs: roles alternate starting with "user"; content is non-empty and text blocks are
 * non-empty; every `tool_use` is answered by a `tool_result` in the very next (user) message, and those
 * results come first in it; every `tool_result` answers a `tool_use` of the message just before.
 */
import type { MessageParam } from "../../src/model/model-client.js";

type Block = Exclude<MessageParam["content"], string>[number];

/** Problems found, in words; empty when the list is a valid request body. */
export function validateConversation(messages: readonly MessageParam[]): string[] {
  const problems: string[] = [];
  const seenToolUseIds = new Set<string>();
  if (messages.length === 0) problems.push("messages: at least one message is required");
  if (messages[0] !== undefined && messages[0].role !== "user")
    problems.push("messages.0: first message must be user");

  messages.forEach((message, i) => {
    const at = `messages.${i}`;
    const previous = messages[i - 1];
    if (previous !== undefined && previous.role === message.role) {
      problems.push(`${at}: roles must alternate (two ${message.role} messages in a row)`);
    }
    const blocks: Block[] =
      typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content;
    if (blocks.length === 0) problems.push(`${at}: content must be non-empty`);
    blocks.forEach((block, j) => {
      if (block.type === "text" && block.text === "")
        problems.push(`${at}.content.${j}: text must be non-empty`);
    });

    if (message.role === "assistant") {
      for (const block of blocks) {
        if (block.type === "tool_result")
          problems.push(`${at}: tool_result is not allowed in an assistant message`);
        if (block.type !== "tool_use") continue;
        if (seenToolUseIds.has(block.id)) problems.push(`${at}: duplicate tool_use id ${block.id}`);
        seenToolUseIds.add(block.id);
      }
      return;
    }

    const expected = toolUseIds(previous);
    const resultIds: string[] = [];
    let seenOther = false;
    blocks.forEach((block, j) => {
      if (block.type !== "tool_result") {
        seenOther = true;
        return;
      }
      if (seenOther) problems.push(`${at}.content.${j}: tool_result blocks must come first`);
      if (!expected.includes(block.tool_use_id)) {
        problems.push(`${at}.content.${j}: tool_result for unknown tool_use id ${block.tool_use_id}`);
      }
      if (resultIds.includes(block.tool_use_id))
        problems.push(`${at}: two tool_results for ${block.tool_use_id}`);
      resultIds.push(block.tool_use_id);
    });
    for (const id of expected) {
      if (!resultIds.includes(id))
        problems.push(`${at}: tool_use ${id} has no tool_result immediately after it`);
    }
  });

  const last = messages.at(-1);
  for (const id of last?.role === "assistant" ? toolUseIds(last) : []) {
    problems.push(`messages.${messages.length - 1}: tool_use ${id} is never answered`);
  }
  return problems;
}

/** Throws with every problem when `messages` would be rejected by the API. */
export function assertValidConversation(messages: readonly MessageParam[]): void {
  const problems = validateConversation(messages);
  if (problems.length > 0) throw new Error(`Invalid conversation:\n- ${problems.join("\n- ")}`);
}

function toolUseIds(message: MessageParam | undefined): string[] {
  if (message?.role !== "assistant" || typeof message.content === "string") return [];
  return message.content.flatMap((block) => (block.type === "tool_use" ? [block.id] : []));
}
