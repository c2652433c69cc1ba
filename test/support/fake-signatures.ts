/**
 * The fake's signed blocks: thinking, redacted thinking and compaction blocks carry a signature (or,
 * redacted, opaque data) made with a key only the fake knows, so a block the client altered, or made
 * up, fails verification exactly as the real API's would.
 */
import { createHmac } from "node:crypto";

const KEY = "fake-messages-api-signing-key";

const mac = (...parts: string[]) =>
  createHmac("sha256", KEY).update(parts.join("\u0000")).digest("base64url").slice(0, 32);

/** The signature of a thinking block with this text. */
export function signThinking(thinking: string): string {
  return `sig_${mac("thinking", thinking)}`;
}

/** True when `signature` is the one the fake gave a thinking block with this text. */
export function verifyThinking(thinking: unknown, signature: unknown): boolean {
  return (
    typeof thinking === "string" && typeof signature === "string" && signature === signThinking(thinking)
  );
}

/** The opaque data of a redacted_thinking block (what the model thought is not there). */
export function redactedData(seed: string): string {
  const payload = Buffer.from(`redacted:${seed}`).toString("base64url");
  return `${payload}.${mac("redacted", payload)}`;
}

/** True when `data` is redacted data the fake made. */
export function verifyRedacted(data: unknown): boolean {
  if (typeof data !== "string") return false;
  const [payload = "", tag] = data.split(".");
  return tag === mac("redacted", payload);
}

/** A compaction block's opaque state and signature, for its summary and its `tool_changes`. */
export function signCompaction(
  content: string,
  toolChanges: unknown[],
): { encrypted_content: string; signature: string } {
  const encrypted = Buffer.from(`state:${mac("state", content)}`).toString("base64url");
  return {
    encrypted_content: encrypted,
    signature: `csig_${mac("block", encrypted)}.${mac("content", content)}.${mac("tools", JSON.stringify(toolChanges))}`,
  };
}

/**
 * Why a compaction block does not verify, as the API's `error_code`, or null when it does: the
 * signature must be the fake's for its `encrypted_content`, its content the text it recorded, and
 * its `tool_changes` (sent back unchanged, as the SDK says) the ones returned with it.
 */
export function compactionProblem(
  block: Record<string, unknown>,
):
  | "compaction_signature_invalid"
  | "compaction_content_mismatch"
  | "compaction_tool_changes_mismatch"
  | null {
  const { signature, encrypted_content: encrypted, content } = block;
  if (typeof signature !== "string" || typeof encrypted !== "string") return "compaction_signature_invalid";
  const [head = "", contentTag, toolsTag] = signature.split(".");
  if (head !== `csig_${mac("block", encrypted)}`) return "compaction_signature_invalid";
  if (content === null || content === undefined) return null;
  if (typeof content !== "string" || contentTag !== mac("content", content))
    return "compaction_content_mismatch";
  return toolsTag === mac("tools", JSON.stringify(block["tool_changes"] ?? null))
    ? null
    : "compaction_tool_changes_mismatch";
}
