/**
 * The request checks the real Messages API makes, with its error types and (close to) its wording,
 * so a malformed conversation from the agent loop fails here the way it would in production.
 */
import type { IncomingHttpHeaders } from "node:http";
import type { ApiErrorType } from "./fake-messages-sse.js";

/** A rejection: the HTTP status and the body's `error.type` and `error.message`. */
export interface ValidationFailure {
  status: number;
  type: ApiErrorType;
  message: string;
  /** `error.details.error_code`, for the errors the API names one (the compaction ones). */
  errorCode?: string;
}

/** Request JSON as received: every field may be missing or of any type. */
interface Loose {
  type?: unknown;
  text?: unknown;
  id?: unknown;
  tool_use_id?: unknown;
  cache_control?: unknown;
  role?: unknown;
  content?: unknown;
  name?: unknown;
  input_schema?: unknown;
  model?: unknown;
  max_tokens?: unknown;
  messages?: unknown;
  system?: unknown;
  tools?: unknown;
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const MAX_CACHE_BREAKPOINTS = 4;

const invalid = (message: string): ValidationFailure => ({
  status: 400,
  type: "invalid_request_error",
  message,
});

const isObject = (value: unknown): value is Loose =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Headers only: auth, then version. `null` means they are fine. */
export function validateHeaders(
  headers: IncomingHttpHeaders,
  apiKey: string | undefined,
): ValidationFailure | null {
  // The SDK sends `Authorization: Bearer <key>` for an API key; older clients send `x-api-key`.
  const bearer = /^Bearer (.+)$/.exec(String(headers.authorization ?? ""))?.[1];
  const key = headers["x-api-key"] ?? bearer;
  if (key === undefined) {
    return { status: 401, type: "authentication_error", message: "x-api-key header is required" };
  }
  if (apiKey !== undefined && key !== apiKey) {
    return { status: 401, type: "authentication_error", message: "invalid x-api-key" };
  }
  if (headers["anthropic-version"] === undefined) {
    return invalid("anthropic-version: header is required");
  }
  return null;
}

function countCacheControl(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + countCacheControl(item), 0);
  if (!isObject(value)) return 0;
  let count = value.cache_control != null ? 1 : 0;
  for (const [key, inner] of Object.entries(value)) {
    // Tool inputs and schemas are user data: a property named cache_control there is not a breakpoint.
    if (key !== "cache_control" && key !== "input" && key !== "input_schema")
      count += countCacheControl(inner);
  }
  return count;
}

function checkBlocks(blocks: unknown[], path: string): ValidationFailure | null {
  for (const [i, block] of blocks.entries()) {
    if (!isObject(block) || typeof block.type !== "string") {
      return invalid(`${path}.${i}: content blocks must be objects with a "type"`);
    }
    if (block.type === "text" && (typeof block.text !== "string" || block.text === "")) {
      return invalid(`${path}.${i}.text: text content blocks must be non-empty`);
    }
  }
  return null;
}

function opensWithCompaction(content: unknown): boolean {
  return Array.isArray(content) && isObject(content[0]) && content[0].type === "compaction";
}

function toolUseIds(content: unknown): string[] {
  if (!Array.isArray(content)) return [];
  return content.filter((b) => isObject(b) && b.type === "tool_use").map((b) => String(b.id));
}

/** Tool pairing: every tool_use answered first thing in the next user message, and nothing else answered. */
function checkToolPairing(messages: Loose[]): ValidationFailure | null {
  for (const [i, message] of messages.entries()) {
    const asked = i > 0 ? toolUseIds(messages[i - 1]?.content) : [];
    const content = message.content;
    const blocks = Array.isArray(content) ? content.filter(isObject) : [];
    if (message.role === "user") {
      const results = blocks.filter((b) => b.type === "tool_result").map((b) => String(b.tool_use_id));
      const unexpected = results.filter((id) => !asked.includes(id));
      if (unexpected.length > 0) {
        return invalid(
          `messages.${i}.content: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${unexpected.join(", ")}. ` +
            "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
        );
      }
      const firstNonResult = blocks.findIndex((b) => b.type !== "tool_result");
      const leading = firstNonResult === -1 ? results : results.slice(0, firstNonResult);
      const missing = asked.filter((id) => !leading.includes(id));
      if (missing.length > 0) {
        return invalid(
          `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(", ")}. ` +
            "Each `tool_use` block must have a corresponding `tool_result` block in the next message, " +
            "and the `tool_result` blocks must come first in its content.",
        );
      }
    }
  }
  // A trailing assistant message with tool_use is a continuation prefix, which the API accepts.
  return null;
}

function checkMessages(messages: unknown): ValidationFailure | null {
  if (messages === undefined) return invalid("messages: Field required");
  if (!Array.isArray(messages) || messages.length === 0) {
    return invalid("messages: Input should be a non-empty list");
  }
  for (const [i, message] of messages.entries()) {
    if (!isObject(message)) return invalid(`messages.${i}: Input should be a valid dictionary`);
    const role = message.role;
    if (role !== "user" && role !== "assistant") {
      return invalid(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    }
    // An assistant message that opens with a compaction block stands for everything before it.
    if (i === 0 && role !== "user" && !opensWithCompaction(message.content))
      return invalid('messages: first message must use the "user" role');
    if (i > 0 && messages[i - 1]?.role === role) {
      return invalid(
        `messages: roles must alternate between "user" and "assistant", but found multiple "${role}" roles in a row`,
      );
    }
    const content = message.content;
    const isLast = i === messages.length - 1;
    if (typeof content === "string") {
      if (content === "" && !(isLast && role === "assistant")) {
        return invalid(
          `messages.${i}: all messages must have non-empty content except for the optional final assistant message`,
        );
      }
    } else if (Array.isArray(content)) {
      if (content.length === 0 && !(isLast && role === "assistant")) {
        return invalid(
          `messages.${i}: all messages must have non-empty content except for the optional final assistant message`,
        );
      }
      const failure = checkBlocks(content, `messages.${i}.content`);
      if (failure) return failure;
    } else {
      return invalid(`messages.${i}.content: Input should be a valid string or list`);
    }
  }
  return checkToolPairing(messages as Loose[]);
}

/** Anthropic-defined client tools: their type and the one name each must have. */
const BUILT_IN_TOOLS: Record<string, string> = {
  bash_20250124: "bash",
  text_editor_20250728: "str_replace_based_edit_tool",
};

function checkTools(tools: unknown): ValidationFailure | null {
  if (tools === undefined) return null;
  if (!Array.isArray(tools)) return invalid("tools: Input should be a valid list");
  for (const [i, tool] of tools.entries()) {
    if (!isObject(tool)) return invalid(`tools.${i}: Input should be a valid dictionary`);
    if (tool.type !== undefined && tool.type !== "custom") {
      const name = BUILT_IN_TOOLS[String(tool.type)];
      if (name === undefined)
        return invalid(
          `tools.${i}: Input tag '${String(tool.type)}' found using 'type' does not match any of the expected tags`,
        );
      if (tool.name !== name)
        return invalid(`tools.${i}.${String(tool.type)}.name: Input should be '${name}'`);
      const max = (tool as { max_characters?: unknown }).max_characters;
      if (max !== undefined && max !== null && !(Number.isInteger(max) && (max as number) >= 1))
        return invalid(
          `tools.${i}.${String(tool.type)}.max_characters: Input should be greater than or equal to 1`,
        );
      continue;
    }
    if (typeof tool.name !== "string" || !TOOL_NAME.test(tool.name)) {
      return invalid(`tools.${i}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'`);
    }
    if (!isObject(tool.input_schema)) return invalid(`tools.${i}.custom.input_schema: Field required`);
  }
  return null;
}

function checkSystem(system: unknown): ValidationFailure | null {
  if (system === undefined || typeof system === "string") return null;
  if (!Array.isArray(system)) return invalid("system: Input should be a valid string or list");
  return checkBlocks(system, "system");
}

/** With validation off, the body must still be a JSON object. */
export function validateJsonObject(body: unknown): ValidationFailure | null {
  return isObject(body) ? null : invalid("The request body is not valid JSON.");
}

/** The body checks, in the order the API reports them. `null` means the body is fine. */
export function validateBody(body: unknown): ValidationFailure | null {
  if (!isObject(body)) return invalid("The request body is not valid JSON.");
  const model = body.model;
  if (model === undefined) return invalid("model: Field required");
  if (typeof model !== "string" || model === "") return invalid("model: Input should be a non-empty string");
  const maxTokens = body.max_tokens;
  if (maxTokens === undefined) return invalid("max_tokens: Field required");
  if (!Number.isInteger(maxTokens) || (maxTokens as number) < 1) {
    return invalid("max_tokens: Input should be an integer greater than or equal to 1");
  }
  const failure = checkMessages(body.messages) ?? checkSystem(body.system) ?? checkTools(body.tools);
  if (failure) return failure;
  const breakpoints = countCacheControl([body.system, body.tools, body.messages]);
  if (breakpoints > MAX_CACHE_BREAKPOINTS) {
    return invalid(
      `A maximum of ${MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found ${breakpoints}.`,
    );
  }
  return null;
}
