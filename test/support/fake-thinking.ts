/**
 * The fake's rules for thinking sent back, as the API's docs state them:
 * - With thinking on, the last assistant turn of a tool-use loop (its tool calls answered by the last
 *   user message) must carry the thinking that came with its tool calls, unchanged and in order
 *   ("Pass thinking blocks back complete and unmodified"). Earlier turns' thinking may be left out.
 * - A model with preserved thinking also checks each thinking block's prefix: the system prompt, the
 *   tools and every message before the block must be what they were when the block was made, and
 *   no thinking block between others may be left out or moved ("Prefix checks on thinking blocks",
 *   platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks). A block whose
 *   prefix changed is refused with the API's 400.
 * The signatures themselves are checked in fake-context.ts (`checkSignedBlocks`).
 */
import { createHash } from "node:crypto";
import type { ValidationFailure } from "./fake-messages-validate.js";

type Loose = Record<string, unknown>;
const isObject = (value: unknown): value is Loose =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const invalid = (message: string): ValidationFailure => ({
  status: 400,
  type: "invalid_request_error",
  message,
});

const keyOf = (block: Loose): string =>
  String(block["type"] === "thinking" ? block["signature"] : block["data"]);
const isThinking = (block: unknown): block is Loose =>
  isObject(block) && (block["type"] === "thinking" || block["type"] === "redacted_thinking");

/** What a request's model saw besides its messages. */
export interface Preamble {
  system: unknown;
  tools: unknown;
}

/** A block as the prefix check compares it: what it says, not where a cache breakpoint sat. */
function canonicalBlock(block: unknown): unknown {
  if (typeof block === "string") return { type: "text", text: block };
  if (!isObject(block)) return block;
  switch (block["type"]) {
    case "text":
      return { type: "text", text: block["text"] };
    case "tool_use":
      return { type: "tool_use", id: block["id"], name: block["name"], input: block["input"] };
    case "tool_result": {
      const content = block["content"];
      return {
        type: "tool_result",
        tool_use_id: block["tool_use_id"],
        content: Array.isArray(content) ? content.map(canonicalBlock) : content,
        is_error: block["is_error"] === true,
      };
    }
    default: {
      const { cache_control: _breakpoint, ...rest } = block;
      return rest;
    }
  }
}

/** The messages as one list of (role, block), so a turn split over messages reads the same. */
function flatten(messages: readonly Loose[]): string[] {
  return messages.flatMap((message) => {
    const content = message["content"];
    const blocks = Array.isArray(content) ? content : [content];
    return blocks.map((block) => JSON.stringify([message["role"], canonicalBlock(block)]));
  });
}

function digest(preamble: Preamble, flat: readonly string[]): string {
  const system = Array.isArray(preamble.system)
    ? preamble.system.map((b) => (isObject(b) ? b["text"] : b))
    : preamble.system;
  const tools = Array.isArray(preamble.tools) ? preamble.tools.map(canonicalBlock) : preamble.tools;
  return createHash("sha256")
    .update(JSON.stringify([system, tools, flat]))
    .digest("hex");
}

/** What the fake remembers of the thinking it sent: per tool call, and per block its prefix. */
export class ThinkingLedger {
  private readonly byToolUse = new Map<string, string[]>();
  private readonly prefixes = new Map<string, string>();

  /**
   * A response went out. `context`: the messages the model answered from (the request's, or none
   * when it compacted them: the response's own compaction block is then all it saw).
   */
  record(content: readonly Loose[], preamble: Preamble, context: readonly Loose[]): void {
    const flat = flatten(context);
    for (const [j, block] of content.entries()) {
      if (isThinking(block))
        this.prefixes.set(
          keyOf(block),
          digest(preamble, [...flat, ...flatten([{ role: "assistant", content: content.slice(0, j) }])]),
        );
    }
    const signatures = content.filter(isThinking).map(keyOf);
    if (signatures.length === 0) return;
    for (const block of content)
      if (block["type"] === "tool_use") this.byToolUse.set(String(block["id"]), signatures);
  }

  /** The checks above, on the messages the model would see. `null` when they pass. */
  check(
    messages: readonly Loose[],
    options: { thinkingOn: boolean; preserved: boolean; preamble: Preamble },
  ): ValidationFailure | null {
    return (
      (options.preserved ? this.checkPrefixes(messages, options.preamble) : null) ??
      (options.thinkingOn ? this.checkOpenTurn(messages) : null)
    );
  }

  private checkPrefixes(messages: readonly Loose[], preamble: Preamble): ValidationFailure | null {
    for (const [i, message] of messages.entries()) {
      const content = message["content"];
      if (message["role"] !== "assistant" || !Array.isArray(content)) continue;
      for (const [j, block] of content.entries()) {
        if (!isThinking(block)) continue;
        const made = this.prefixes.get(keyOf(block));
        if (made === undefined) continue;
        const prefix = [
          ...flatten(messages.slice(0, i)),
          ...flatten([{ role: "assistant", content: content.slice(0, j) }]),
        ];
        if (digest(preamble, prefix) !== made)
          return invalid(
            `messages.${i}.content.${j}: Invalid \`signature\` in \`${String(block["type"])}\` block. The block is bound to a different conversation. Remove the block, or set \`thinking.block_binding.prefix_mismatch_behavior\` to "drop_block".`,
          );
      }
    }
    return null;
  }

  private checkOpenTurn(messages: readonly Loose[]): ValidationFailure | null {
    const i = messages.findLastIndex((m) => m["role"] === "assistant");
    const last = messages[i];
    if (last === undefined || !Array.isArray(last["content"])) return null;
    const blocks = (last["content"] as unknown[]).filter(isObject);
    const use = blocks.find((b) => b["type"] === "tool_use");
    const expected = use === undefined ? undefined : this.byToolUse.get(String(use["id"]));
    if (expected === undefined) return null;
    const sent = blocks.filter(isThinking).map(keyOf);
    if (expected.every((signature, k) => sent[k] === signature)) return null;
    const found = String(blocks[0]?.["type"] ?? "nothing");
    return invalid(
      `messages.${i}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${found}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking`,
    );
  }
}
