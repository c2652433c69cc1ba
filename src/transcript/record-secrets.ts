/**
 * What the transcript writes in place of a secret. Anything that looks like an Anthropic API key or
 * an auth header value is masked ("[REDACTED]") wherever a record holds it, with two exceptions the
 * rest of harness depends on:
 * - The blocks the API signed (thinking, redacted_thinking, compaction) are written verbatim:
 *   `run --continue` sends them back, and the API refuses one with a changed byte. Their text often
 *   mentions headers (a model thinking about "Authorization: Bearer …"), which masking would alter.
 *   A signed block that holds an Anthropic API key is not written at all: a `withheld` block stands
 *   in its place.
 * - Where masking changed what the model was sent (a user text, a tool result, a block of an
 *   assistant turn, a summary), the record says so (`masked`, `maskedBlocks`). The API binds each
 *   thinking block to everything before it, so a conversation rebuilt from the transcript cannot
 *   send back the thinking that came after a change (read-conversation.ts leaves it out).
 */
import type { WithheldBlock } from "./transcript-records.js";

const API_KEY = /sk-ant-[A-Za-z0-9_-]+/g;
const HOLDS_API_KEY = /sk-ant-[A-Za-z0-9_-]+/;
const SECRET_HEADER =
  /((?:x-api-key|authorization)["']?\s*[:=]\s*["']?)(?:(?:Bearer|Basic)\s+)?[^\s"',;}]+/gi;
const SECRET_KEY_NAME = /^(?:x-api-key|authorization|api[-_]?key|anthropic[-_]api[-_]key)$/i;
const SIGNED_BLOCKS: ReadonlySet<string> = new Set(["thinking", "redacted_thinking", "compaction"]);

/** Why a signed block was not written. */
export const WITHHELD_REASON = "it held an Anthropic API key";

/**
 * A copy of `value` with anything that looks like an Anthropic key or an auth header value replaced by
 * "[REDACTED]". Harness never gives the transcript a key, but the model or a command can print one.
 */
export function scrubSecrets(value: unknown): unknown {
  return scrub(value, new WeakSet(), { changed: false });
}

/** `scrubSecrets`, and whether it changed anything. */
function scrubTracked(value: unknown): { value: unknown; changed: boolean } {
  const state = { changed: false };
  return { value: scrub(value, new WeakSet(), state), changed: state.changed };
}

function scrub(value: unknown, seen: WeakSet<object>, state: { changed: boolean }): unknown {
  if (typeof value === "string") {
    const masked = value.replace(API_KEY, "sk-ant-[REDACTED]").replace(SECRET_HEADER, "$1[REDACTED]");
    if (masked !== value) state.changed = true;
    return masked;
  }
  if (typeof value !== "object" || value === null) return value;
  if (value instanceof Error) return { name: value.name, message: scrub(value.message, seen, state) };
  if (seen.has(value)) return "[Circular]";
  seen.add(value);
  let copy: unknown;
  if (Array.isArray(value)) {
    copy = value.map((item) => scrub(item, seen, state));
  } else {
    const fields: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      if (SECRET_KEY_NAME.test(key) && typeof item === "string") {
        if (item !== "[REDACTED]") state.changed = true;
        fields[key] = "[REDACTED]";
      } else fields[key] = scrub(item, seen, state);
    }
    copy = fields;
  }
  // Only ancestors make a cycle: the same object in two places is written twice.
  seen.delete(value);
  return copy;
}

/** A block whose fields the API signed: sent back byte for byte or not at all. */
export function isSignedBlock(block: unknown): boolean {
  const type = (block as { type?: unknown } | null)?.type;
  return typeof type === "string" && SIGNED_BLOCKS.has(type);
}

/** The block as written: verbatim, or withheld when it holds an Anthropic API key. */
function signedBlockForFile(block: object): object {
  if (!HOLDS_API_KEY.test(JSON.stringify(block))) return block;
  const withheld: WithheldBlock = {
    type: "withheld",
    block: String((block as { type: unknown }).type),
    reason: WITHHELD_REASON,
  };
  return withheld;
}

/**
 * A record as the transcript writes it: every field scrubbed, signed blocks verbatim (or withheld),
 * and `masked` / `maskedBlocks` where the conversation the model was sent was changed. The fields
 * keep their order (`harness runs` reads an assistant record's model from its first bytes).
 */
export function recordForFile(record: { type: string } & Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  let masked = false;
  const maskedBlocks: number[] = [];
  for (const [key, value] of Object.entries(record)) {
    if (record.type === "assistant" && key === "content" && Array.isArray(value)) {
      out[key] = value.map((block: unknown, i) => {
        if (isSignedBlock(block)) return signedBlockForFile(block as object);
        const scrubbed = scrubTracked(block);
        if (scrubbed.changed) maskedBlocks.push(i);
        return scrubbed.value;
      });
      continue;
    }
    const scrubbed = scrubTracked(value);
    out[key] = scrubbed.value;
    if (scrubbed.changed && conversationField(record, key)) masked = true;
  }
  if (maskedBlocks.length > 0) out["maskedBlocks"] = maskedBlocks;
  if (masked) out["masked"] = true;
  return out;
}

/** Whether `key` of the record is part of the conversation a continued run sends. */
function conversationField(record: { type: string } & Record<string, unknown>, key: string): boolean {
  switch (record.type) {
    case "user":
      return key === "text";
    case "tool_result":
      return key === "content";
    case "context":
      return key === "summary";
    default:
      return false;
  }
}
