/**
 * The edits that keep a conversation within the model's context window, as operations on the message
 * list. The loop applies them as it goes (context-manager.ts) and `run --continue` applies the same
 * ones again from the transcript (transcript/read-conversation.ts), so both get the same messages:
 * - a server compaction: everything before the assistant message that opens with the `compaction`
 *   block is dropped (the API ignores it anyway; the block, sent back verbatim, stands for it);
 * - cleared tool results: a result's text replaced by a line pointing at its saved copy (read_output);
 * - a summary: every message before the last assistant turn replaced by one user message holding the
 *   model's summary of them.
 */
import type { MessageParam, TokenUsage } from "../../model/model-client.js";

/** One tool result cleared: its `tool_use` id and what the model sees instead. */
export interface ClearedResult {
  toolUseId: string;
  placeholder: string;
}

/** An edit of the conversation, as reported and recorded. */
export type ContextEdit =
  | {
      kind: "compaction";
      /** The API compacted (`compact_20260112`); harness dropped the messages the block stands for. */
      by: "server";
      /** Messages dropped from the front of the conversation. */
      droppedMessages: number;
      /** Input tokens of the compacted context the model answered from. */
      contextTokens: number;
      /** What the compaction itself cost (already in the response's usage). */
      usage?: TokenUsage;
    }
  | {
      kind: "clear_tool_results";
      cleared: ClearedResult[];
      /** Estimated input tokens before and after. */
      tokensBefore: number;
      tokensAfter: number;
    }
  | {
      kind: "summary";
      /** The model's summary of the messages it replaces. */
      summary: string;
      /** Messages kept after the summary (the last turn). */
      keptMessages: number;
      tokensBefore: number;
      tokensAfter: number;
      /** What the summary request cost. */
      usage: TokenUsage;
    };

/** The user message that stands for the summarized part of the conversation. */
export function summaryMessage(summary: string): MessageParam {
  const text =
    "The earlier part of this conversation was summarized by harness to keep it within the model's context window. " +
    "Outputs of the earlier tool calls may still be readable with read_output where a result names an id.\n\n" +
    `<summary>\n${summary}\n</summary>`;
  return { role: "user", content: [{ type: "text", text }] };
}

/** The conversation with everything before its last `keptMessages` messages replaced by the summary. */
export function applySummary(
  messages: readonly MessageParam[],
  summary: string,
  keptMessages: number,
): MessageParam[] {
  const tail = keptMessages > 0 ? messages.slice(-keptMessages) : [];
  // The tail starts with an assistant turn; a tail that starts with a user message is merged into the summary.
  const [first, ...rest] = tail;
  const head = summaryMessage(summary);
  if (first?.role !== "user") return [head, ...tail];
  const content =
    typeof first.content === "string" ? [{ type: "text" as const, text: first.content }] : first.content;
  return [
    { role: "user", content: [...(head.content as Exclude<MessageParam["content"], string>), ...content] },
    ...rest,
  ];
}

/** What a cleared result says instead of its text. */
export function clearedPlaceholder(savedId: string | undefined, text: string): string {
  const size = `${text.length.toLocaleString("en-US")} characters`;
  return savedId === undefined
    ? `[harness cleared this tool result (${size}) to keep the conversation within the model's context window; it was not saved: run the command again if you need it]`
    : `[harness cleared this tool result (${size}) to keep the conversation within the model's context window; its text is saved: read it with read_output (id "${savedId}")]`;
}

/** Replaces the text of the named tool results, in place. Returns how many were found. */
export function applyClearedResults(messages: MessageParam[], cleared: readonly ClearedResult[]): number {
  const byId = new Map(cleared.map((c) => [c.toolUseId, c.placeholder]));
  let found = 0;
  for (const [i, message] of messages.entries()) {
    if (message.role !== "user" || typeof message.content === "string") continue;
    let changed = false;
    const content = message.content.map((block) => {
      const placeholder = block.type === "tool_result" ? byId.get(block.tool_use_id) : undefined;
      if (placeholder === undefined || block.type !== "tool_result") return block;
      changed = true;
      found += 1;
      const { cache_control: _dropped, ...rest } = block;
      return { ...rest, content: placeholder };
    });
    if (changed) messages[i] = { ...message, content };
  }
  return found;
}

/** A tool result of the conversation, with its text. */
export interface ToolResultText {
  toolUseId: string;
  text: string;
}

/** The tool results not cleared yet, oldest first. */
export function toolResultTexts(messages: readonly MessageParam[]): ToolResultText[] {
  const found: ToolResultText[] = [];
  for (const message of messages) {
    if (message.role !== "user" || typeof message.content === "string") continue;
    for (const block of message.content) {
      if (block.type !== "tool_result") continue;
      const text = typeof block.content === "string" ? block.content : JSON.stringify(block.content ?? "");
      if (!text.startsWith("[harness cleared this tool result"))
        found.push({ toolUseId: block.tool_use_id, text });
    }
  }
  return found;
}

/**
 * After a response with a compaction block: drops the messages before the one holding it and starts
 * that message at the block. Returns how many messages were dropped (0 when none holds a block).
 */
export function dropBeforeCompaction(messages: MessageParam[]): number {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i];
    if (message?.role !== "assistant" || typeof message.content === "string") continue;
    const at = message.content.findIndex((block) => block.type === "compaction" && block.content != null);
    if (at < 0) continue;
    const kept = { ...message, content: message.content.slice(at) };
    messages.splice(0, i + 1, kept);
    return i;
  }
  return 0;
}
