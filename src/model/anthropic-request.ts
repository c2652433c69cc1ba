/**
 * A `ModelRequest` as Messages API params, and a response back as a `ModelResponse`: prompt caching,
 * the Anthropic-defined tools, thinking, effort and server-side compaction (with the beta header it
 * needs), and usage with a compaction's own tokens counted. Types only from the SDK: the one runtime
 * importer is anthropic-model-client.ts.
 */
import type {
  BetaCacheControlEphemeral,
  BetaContentBlockParam,
  BetaMessage,
  BetaTextBlockParam,
  BetaToolUnion,
  BetaUsage,
  MessageCreateParamsBase,
} from "@anthropic-ai/sdk/resources/beta/messages/messages";
import type { ToolDefinition } from "../tools/tool.js";
import type { MessageParam, ModelRequest, ModelResponse, TokenUsage } from "./model-client.js";

/** The beta header server-side compaction needs (`context_management` with `compact_20260112`). */
export const COMPACTION_BETA = "compact-2026-01-12";

/** The API's limit on blocks carrying `cache_control` in one request. */
const MAX_CACHE_BREAKPOINTS = 4;

const ephemeral = (): BetaCacheControlEphemeral => ({ type: "ephemeral" });

function countBreakpoints(blocks: unknown): number {
  if (!Array.isArray(blocks)) return 0;
  let count = 0;
  for (const block of blocks) {
    if (typeof block !== "object" || block === null) continue;
    if ("cache_control" in block && block.cache_control != null) count += 1;
    if ("content" in block) count += countBreakpoints(block.content);
  }
  return count;
}

/** A copy of `message` whose last block carries `cache_control`; `undefined` if it cannot carry one. */
function withCacheBreakpoint(message: MessageParam): MessageParam | undefined {
  const content: BetaContentBlockParam[] =
    typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content;
  const last = content.at(-1);
  if (!last || last.type === "thinking" || last.type === "redacted_thinking") return undefined;
  if (last.type === "text" && last.text === "") return undefined;
  const marked = { ...last, cache_control: ephemeral() } as BetaContentBlockParam;
  return { ...message, content: [...content.slice(0, -1), marked] };
}

function toTool(definition: ToolDefinition): BetaToolUnion {
  const builtIn = definition.anthropic;
  if (builtIn?.type === "bash_20250124") return { type: builtIn.type, name: "bash" };
  if (builtIn?.type === "text_editor_20250728") {
    return {
      type: builtIn.type,
      name: "str_replace_based_edit_tool",
      ...(builtIn.maxCharacters === undefined ? {} : { max_characters: builtIn.maxCharacters }),
    };
  }
  return { name: definition.name, description: definition.description, input_schema: definition.inputSchema };
}

/**
 * Request params with prompt-caching breakpoints on the newest user message, the system prompt and the
 * last tool, within the API's limit of 4 (counting any the caller set), and the beta headers the
 * request's features need. The caller's messages stay untouched: only copies carry `cache_control`.
 */
export function buildParams(request: ModelRequest, model: string): MessageCreateParamsBase {
  const callerBreakpoints = request.messages.reduce((sum, m) => sum + countBreakpoints(m.content), 0);
  let budget = MAX_CACHE_BREAKPOINTS - callerBreakpoints;
  const take = () => budget-- > 0;
  const messages = [...request.messages];
  const newestUser = messages.findLastIndex((m) => m.role === "user");
  const newest = messages[newestUser];
  const lastBlock = newest && typeof newest.content !== "string" ? newest.content.at(-1) : undefined;
  const alreadyMarked =
    lastBlock !== undefined && "cache_control" in lastBlock && lastBlock.cache_control != null;
  if (newest && !alreadyMarked && budget > 0) {
    const marked = withCacheBreakpoint(newest);
    if (marked && take()) messages[newestUser] = marked;
  }
  const params: MessageCreateParamsBase = { model, max_tokens: request.maxTokens, messages };
  if (request.system !== "") {
    const system: BetaTextBlockParam = { type: "text", text: request.system };
    if (take()) system.cache_control = ephemeral();
    params.system = [system];
  }
  if (request.tools.length > 0) {
    const tools = request.tools.map(toTool);
    const lastTool = tools.at(-1);
    if (lastTool && take()) lastTool.cache_control = ephemeral();
    params.tools = tools;
  }
  const { thinking, effort, compactAtTokens } = request;
  if (thinking?.type === "enabled")
    params.thinking = { type: "enabled", budget_tokens: thinking.budgetTokens };
  else if (thinking !== undefined) params.thinking = { type: thinking.type };
  if (effort !== undefined) params.output_config = { effort };
  if (compactAtTokens !== undefined) {
    params.context_management = {
      edits: [{ type: "compact_20260112", trigger: { type: "input_tokens", value: compactAtTokens } }],
    };
  }
  // A compaction block sent back needs the beta as much as the edit does (a run continued without it).
  if (compactAtTokens !== undefined || request.messages.some(holdsCompaction))
    params.betas = [COMPACTION_BETA];
  return params;
}

function holdsCompaction(message: MessageParam): boolean {
  return typeof message.content !== "string" && message.content.some((block) => block.type === "compaction");
}

const tokens = (usage: {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}): TokenUsage => ({
  inputTokens: usage.input_tokens ?? 0,
  outputTokens: usage.output_tokens ?? 0,
  cacheReadInputTokens: usage.cache_read_input_tokens ?? 0,
  cacheCreationInputTokens: usage.cache_creation_input_tokens ?? 0,
});

const sum = (a: TokenUsage, b: TokenUsage): TokenUsage => ({
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
  cacheReadInputTokens: a.cacheReadInputTokens + b.cacheReadInputTokens,
  cacheCreationInputTokens: a.cacheCreationInputTokens + b.cacheCreationInputTokens,
});

const inputOf = (usage: TokenUsage) =>
  usage.inputTokens + usage.cacheReadInputTokens + usage.cacheCreationInputTokens;

/**
 * The response, its usage as billed: the API leaves a compaction's own tokens out of the top-level
 * fields (they are an entry of `usage.iterations`), so they are added here for cost and budgets.
 */
export function toModelResponse(message: BetaMessage): ModelResponse {
  const top = tokens(message.usage);
  const { billed, compaction, context } = usageOf(message.usage, top);
  const response: ModelResponse = {
    id: message.id,
    model: message.model,
    content: message.content,
    stopReason: message.stop_reason,
    usage: billed,
    contextTokens: context,
  };
  if (compaction !== undefined) response.compactionUsage = compaction;
  return response;
}

function usageOf(
  usage: BetaUsage,
  top: TokenUsage,
): { billed: TokenUsage; compaction: TokenUsage | undefined; context: number } {
  const iterations = Array.isArray(usage.iterations) ? usage.iterations : [];
  let compaction: TokenUsage | undefined;
  let context = inputOf(top);
  for (const iteration of iterations) {
    if (iteration.type === "compaction") compaction = sum(compaction ?? tokens({}), tokens(iteration));
    // The context window is read from the last sampling iteration, never from a compaction's.
    else if (iteration.type === "message") context = inputOf(tokens(iteration));
  }
  return { billed: compaction === undefined ? top : sum(top, compaction), compaction, context };
}
