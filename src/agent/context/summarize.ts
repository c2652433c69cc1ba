/**
 * Client-side summary of the earlier part of a conversation, for a model (or an endpoint) without
 * server-side compaction: the messages are written out as plain text (tool calls and results cut
 * short, thinking left out: signed blocks cannot be sent outside their turn), within what one request
 * may hold, and the model is asked for notes to go on from.
 */
import type { MessageParam, ModelClient, TokenUsage } from "../../model/model-client.js";
import { textTokens } from "./token-estimate.js";

const SYSTEM = [
  "You summarize the earlier part of a coding agent's conversation. The agent goes on with its task from your summary alone, in place of those messages.",
  "Keep what it needs: the task and its requirements, decisions and their reasons, files created or changed (paths), commands that mattered and their outcomes, errors met and how they were fixed, and what remains to do.",
  "Write concise notes, not a dialogue. Do not address the user.",
].join("\n");

/** Characters of one tool call's input or one tool result written out. */
const BLOCK_CHARS = 2_000;
/** Most output tokens of a summary. */
const SUMMARY_MAX_TOKENS = 4_096;

export interface SummaryOptions {
  /** The model's context window: the summary request must fit it. */
  window: number;
  /** The run's output budget per response (the summary gets at most this). */
  maxTokens: number;
  signal?: AbortSignal | undefined;
}

export interface Summary {
  summary: string;
  usage: TokenUsage;
}

/** Asks `model` for a summary of `messages`. Rejects as `ModelClient.complete` does. */
export async function summarize(
  model: ModelClient,
  messages: readonly MessageParam[],
  options: SummaryOptions,
): Promise<Summary> {
  const maxTokens = Math.min(options.maxTokens, SUMMARY_MAX_TOKENS);
  const room =
    options.window - maxTokens - textTokens(SYSTEM) - Math.max(1_000, Math.ceil(options.window * 0.05));
  const conversation = fitText(written(messages), room);
  const response = await model.complete({
    system: SYSTEM,
    messages: [
      {
        role: "user",
        content: `<conversation>\n${conversation}\n</conversation>\n\nWrite the summary of this conversation now.`,
      },
    ],
    tools: [],
    maxTokens,
    ...(options.signal === undefined ? {} : { signal: options.signal }),
  });
  const text = response.content
    .map((block) => (block.type === "text" ? block.text : ""))
    .join("")
    .trim();
  // An empty answer still must not lose the conversation: its written form, cut, stands in.
  return { summary: text === "" ? fitText(conversation, 2_000) : text, usage: response.usage };
}

/** The messages as plain text. */
function written(messages: readonly MessageParam[]): string {
  const lines: string[] = [];
  for (const message of messages) {
    const who = message.role === "user" ? "USER" : "ASSISTANT";
    if (typeof message.content === "string") {
      lines.push(`${who}: ${message.content}`);
      continue;
    }
    for (const block of message.content) {
      if (block.type === "text") lines.push(`${who}: ${block.text}`);
      else if (block.type === "tool_use")
        lines.push(`${who} called ${block.name}: ${cut(JSON.stringify(block.input ?? {}))}`);
      else if (block.type === "tool_result") {
        const text = typeof block.content === "string" ? block.content : JSON.stringify(block.content ?? "");
        lines.push(`TOOL RESULT${block.is_error ? " (error)" : ""}: ${cut(text)}`);
      } else if (block.type === "compaction" && typeof block.content === "string")
        lines.push(`EARLIER SUMMARY: ${block.content}`);
    }
  }
  return lines.join("\n");
}

function cut(text: string): string {
  if (text.length <= BLOCK_CHARS) return text;
  const half = BLOCK_CHARS / 2;
  return `${text.slice(0, half)} […${(text.length - BLOCK_CHARS).toLocaleString("en-US")} characters cut…] ${text.slice(-half)}`;
}

/** `text` within `tokens`, its middle cut when it is longer (the task is at the start, the latest at the end). */
function fitText(text: string, tokens: number): string {
  let fitted = text;
  for (let round = 0; round < 4 && textTokens(fitted) > tokens; round++) {
    const keep = Math.max(0, Math.floor(fitted.length * (tokens / textTokens(fitted)) * 0.9));
    const half = Math.floor(keep / 2);
    fitted = `${fitted.slice(0, half)}\n[…the middle of the conversation was cut to fit…]\n${fitted.slice(fitted.length - half)}`;
  }
  return fitted;
}
