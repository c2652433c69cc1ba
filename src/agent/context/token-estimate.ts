/**
 * A conservative count of the tokens a request holds, without the model's tokenizer: three characters
 * of ASCII per token (Claude's tokenizer averages nearer four on English and code), one token per
 * other character, and a fixed cost per block and message. context-meter.ts scales it by what the API
 * counted for the requests before, so this only has to be roughly proportional and err high.
 */
import type { MessageParam } from "../../model/model-client.js";
import type { ToolDefinition } from "../../tools/tool.js";

const ASCII_CHARS_PER_TOKEN = 3;

/** What the API adds for its own tool definitions and the tool-use instructions (erring high). */
const BUILT_IN_TOOL_TOKENS = { bash_20250124: 500, text_editor_20250728: 1_200 } as const;
const TOOL_USE_PROMPT_TOKENS = 600;

/** Tokens of a text. */
export function textTokens(text: string): number {
  let ascii = 0;
  let other = 0;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) < 0x80) ascii += 1;
    else other += 1;
  }
  return Math.ceil(ascii / ASCII_CHARS_PER_TOKEN) + other;
}

type Block = Exclude<MessageParam["content"], string>[number] | { type: string; [key: string]: unknown };

/** Tokens of one content block as sent. */
export function blockTokens(block: Block): number {
  const b = block as Record<string, unknown>;
  switch (b["type"]) {
    case "text":
      return textTokens(String(b["text"] ?? "")) + 5;
    case "tool_use":
      return textTokens(`${String(b["name"])}${JSON.stringify(b["input"] ?? {})}`) + 15;
    case "tool_result": {
      const content = b["content"];
      return textTokens(typeof content === "string" ? content : JSON.stringify(content ?? "")) + 15;
    }
    case "thinking":
      return textTokens(String(b["thinking"] ?? "")) + 10;
    case "redacted_thinking":
      return textTokens(String(b["data"] ?? "")) + 10;
    case "compaction":
      return textTokens(String(b["content"] ?? "")) + 10;
    default:
      return textTokens(JSON.stringify(block)) + 5;
  }
}

/** Tokens of one message. */
export function messageTokens(message: MessageParam): number {
  if (typeof message.content === "string") return textTokens(message.content) + 10;
  let tokens = 5;
  for (const block of message.content) tokens += blockTokens(block);
  return tokens;
}

/** Tokens of every message. */
export function messagesTokens(messages: readonly MessageParam[]): number {
  let tokens = 0;
  for (const message of messages) tokens += messageTokens(message);
  return tokens;
}

/** Tokens of what every request carries besides its messages: the system prompt and the tools. */
export function preambleTokens(system: string, tools: readonly ToolDefinition[]): number {
  let tokens = textTokens(system) + (tools.length > 0 ? TOOL_USE_PROMPT_TOKENS : 0);
  for (const tool of tools) {
    tokens += tool.anthropic
      ? BUILT_IN_TOOL_TOKENS[tool.anthropic.type]
      : textTokens(
          JSON.stringify({ name: tool.name, description: tool.description, schema: tool.inputSchema }),
        );
  }
  return tokens;
}
