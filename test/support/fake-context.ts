/**
 * The fake's context window: a deterministic tokenizer (characters per token, set per fake, so a test
 * can make it count more than harness estimates), the input a request really holds (everything before
 * its last `compaction` block is dropped, as the API does), the window check with the API's wording,
 * server-side compaction, and the checks of signed blocks sent back (thinking, redacted thinking,
 * compaction: unaltered, in place, one compaction block at most). What thinking must come back, and
 * after what, is fake-thinking.ts's.
 */

import type { ValidationFailure } from "./fake-messages-validate.js";
import { compactionProblem, signCompaction, verifyRedacted, verifyThinking } from "./fake-signatures.js";

/** Tokens the API adds for its own tool definitions (as its docs list them, roughly). */
const BUILT_IN_TOOL_TOKENS: Record<string, number> = { bash_20250124: 245, text_editor_20250728: 700 };

/** A request's JSON as received: any field may be missing or of any type. */
interface Loose {
  type?: unknown;
  role?: unknown;
  id?: unknown;
  name?: unknown;
  text?: unknown;
  input?: unknown;
  content?: unknown;
  thinking?: unknown;
  signature?: unknown;
  data?: unknown;
  system?: unknown;
  tools?: unknown;
  messages?: unknown;
  [key: string]: unknown;
}
const isObject = (value: unknown): value is Loose =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Counts tokens like a tokenizer would, but predictably: characters per token, plus fixed costs. */
export class FakeTokenizer {
  constructor(readonly charsPerToken: number) {}

  text(text: string): number {
    return Math.ceil(text.length / this.charsPerToken);
  }

  block(block: unknown): number {
    if (typeof block === "string") return this.text(block) + 3;
    if (!isObject(block)) return 0;
    switch (block.type) {
      case "text":
        return this.text(String(block.text ?? "")) + 3;
      case "tool_use":
        return this.text(`${String(block.name)}${JSON.stringify(block.input ?? {})}`) + 10;
      case "tool_result": {
        const content = block.content;
        const body = typeof content === "string" ? content : JSON.stringify(content ?? "");
        return this.text(body) + 10;
      }
      case "thinking":
        return this.text(String(block.thinking ?? "")) + 5;
      case "redacted_thinking":
        return 50;
      case "compaction":
        return this.text(String(block.content ?? "")) + 10;
      default:
        return this.text(JSON.stringify(block)) + 3;
    }
  }

  message(message: Loose): number {
    const content = message.content;
    const blocks = Array.isArray(content) ? content : [content];
    return 4 + blocks.reduce((sum: number, block) => sum + this.block(block), 0);
  }

  /** System prompt and tools: what every request carries besides its messages. */
  preamble(body: Loose): number {
    const system = body.system;
    const systemText = Array.isArray(system)
      ? system.map((b) => (isObject(b) ? String(b.text ?? "") : "")).join("")
      : typeof system === "string"
        ? system
        : "";
    const tools = Array.isArray(body.tools) ? body.tools : [];
    const toolTokens = tools.reduce((sum: number, tool) => {
      const builtIn = isObject(tool) ? BUILT_IN_TOOL_TOKENS[String(tool.type)] : undefined;
      return sum + (builtIn ?? this.text(JSON.stringify(tool)));
    }, 0);
    return this.text(systemText) + toolTokens + (tools.length > 0 ? 300 : 0);
  }
}

/** The messages the model sees: from the last compaction block on (the API drops what comes before). */
export function effectiveMessages(messages: Loose[]): Loose[] {
  for (let i = messages.length - 1; i >= 0; i--) {
    const content = messages[i]?.content;
    if (Array.isArray(content) && content.some((b) => isObject(b) && b.type === "compaction")) {
      const blocks = content as unknown[];
      const at = blocks.findIndex((b) => isObject(b) && b.type === "compaction");
      return [{ ...messages[i], content: blocks.slice(at) }, ...messages.slice(i + 1)];
    }
  }
  return messages;
}

/** Input tokens of the request as the model would see it. */
export function inputTokens(body: Loose, tokenizer: FakeTokenizer): number {
  const messages = Array.isArray(body.messages) ? (body.messages as Loose[]) : [];
  return tokenizer.preamble(body) + effectiveMessages(messages).reduce((s, m) => s + tokenizer.message(m), 0);
}

const invalid = (message: string, errorCode?: string): ValidationFailure => ({
  status: 400,
  type: "invalid_request_error",
  message,
  ...(errorCode === undefined ? {} : { errorCode }),
});

/** The window check, in the API's words. `null` when the request fits. */
export function checkWindow(input: number, maxTokens: number, window: number): ValidationFailure | null {
  if (input > window) return invalid(`prompt is too long: ${input} tokens > ${window} maximum`);
  if (input + maxTokens > window)
    return invalid(
      `input length and \`max_tokens\` exceed context limit: ${input} + ${maxTokens} > ${window}, decrease input length or \`max_tokens\` and try again`,
    );
  return null;
}

/**
 * Signed blocks sent back: every thinking block's signature verifies against its text, every
 * redacted block's data is the fake's, every compaction block verifies (its content and its
 * `tool_changes` too) and opens its assistant message, and no more than one has content; the betas a
 * compaction block needs were sent. The error codes are the SDK's (`compaction_block_ambiguous`:
 * "Send only the block the conversation returned last").
 */
export function checkSignedBlocks(messages: Loose[], compactBeta: boolean): ValidationFailure | null {
  const summaries = messages.flatMap((m) =>
    Array.isArray(m.content)
      ? (m.content as unknown[]).filter((b) => isObject(b) && b.type === "compaction" && b.content != null)
      : [],
  );
  if (summaries.length > 1)
    return invalid(
      "messages: more than one `compaction` block with content. Send only the block the conversation returned last.",
      "compaction_block_ambiguous",
    );
  for (const [i, message] of messages.entries()) {
    const content = message.content;
    if (!Array.isArray(content)) continue;
    for (const [j, block] of content.entries()) {
      if (!isObject(block)) continue;
      const at = `messages.${i}.content.${j}`;
      if (block.type === "thinking" && !verifyThinking(block.thinking, block.signature))
        return invalid(`${at}: Invalid \`signature\` in \`thinking\` block`);
      if (block.type === "redacted_thinking" && !verifyRedacted(block.data))
        return invalid(`${at}: Invalid \`data\` in \`redacted_thinking\` block`);
      if (block.type !== "compaction") continue;
      if (!compactBeta)
        return invalid(
          `${at}.type: Input tag 'compaction' found using 'type' does not match any of the expected tags`,
        );
      if (message.role !== "assistant" || j !== 0)
        return invalid(
          `${at}: a \`compaction\` block must open an \`assistant\` message`,
          "compaction_block_misplaced",
        );
      const problem = compactionProblem(block);
      if (problem === "compaction_signature_invalid")
        return invalid(`${at}: The \`compaction\` block's \`signature\` does not verify.`, problem);
      if (problem === "compaction_content_mismatch")
        return invalid(
          `${at}: The \`compaction\` block's \`content\` differs from the text its \`signature\` recorded.`,
          problem,
        );
      if (problem === "compaction_tool_changes_mismatch")
        return invalid(
          `${at}: The \`compaction\` block's \`tool_changes\` differs from what was returned with the block.`,
          problem,
        );
    }
  }
  return null;
}

/**
 * A compaction of `messages`: a deterministic summary, signed, with the `tool_changes` of the range
 * (`[]`: the range changed no tool, as for every harness run).
 */
export function compact(messages: Loose[], serial: number, toolChanges: unknown[] = []): Loose {
  const firstUser = messages.find((m) => m.role === "user");
  const task = typeof firstUser?.content === "string" ? firstUser.content : "";
  const calls = messages.flatMap((m) =>
    Array.isArray(m.content)
      ? (m.content as unknown[]).filter((b) => isObject(b) && b.type === "tool_use")
      : [],
  ).length;
  const content = `Compaction ${serial}: summary of ${messages.length} messages (${calls} tool calls). Task: ${task.slice(0, 200)}`;
  return { type: "compaction", content, ...signCompaction(content, toolChanges), tool_changes: toolChanges };
}
