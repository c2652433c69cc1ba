/**
 * What a run's tokens cost, for `--max-budget-usd` and the cost shown at the end of a run. An estimate:
 * harness prices the token counts the API reports, it does not see the invoice.
 *
 * Prices are USD per million tokens from Anthropic's pricing page
 * (https://platform.claude.com/docs/en/about-claude/pricing, "Model pricing" table), read 2026-11-30.
 * Newer families (Opus 5.x, Sonnet 5.x, Haiku 5.5, Fable) are left out on purpose: they match no row, so
 * their cost is unknown (null) unless HARNESS_PRICE_* is set, rather than silently wrong. Cache writes
 * use the 5-minute rate because harness only sets `cache_control: ephemeral` with the default TTL.
 * Sonnet's >200K-token long-context rate is not modelled: it needs the 1M-context beta header, which
 * harness never sends, so no request can be that long.
 */
import { ConfigError } from "../errors.js";
import type { TokenUsage } from "./model-client.js";

/** USD per million tokens, for each kind of token the API bills. */
export interface ModelPricing {
  /** Input tokens after the last cache breakpoint. */
  inputPerMTok: number;
  /** Output tokens. */
  outputPerMTok: number;
  /** Input tokens written to the prompt cache (5-minute TTL). */
  cacheWritePerMTok: number;
  /** Input tokens read from the prompt cache. */
  cacheReadPerMTok: number;
  /** Where the prices came from: the table row's family, or "HARNESS_PRICE_*" when env set any. */
  source: string;
}

type Prices = Omit<ModelPricing, "source">;

const price = (input: number, output: number, cacheWrite: number, cacheRead: number): Prices => ({
  inputPerMTok: input,
  outputPerMTok: output,
  cacheWritePerMTok: cacheWrite,
  cacheReadPerMTok: cacheRead,
});

/**
 * First match wins. Patterns are not anchored, so provider ids match too
 * ("anthropic.claude-sonnet-4-5-20250929-v1:0" on Bedrock, "claude-opus-4-1@20250805" on Vertex).
 */
const TABLE: ReadonlyArray<{ family: string; pattern: RegExp; prices: Prices }> = [
  // Opus 4 and 4.1 kept the Claude 3 Opus prices; from Opus 4.5 on, Opus costs a third of that.
  // "claude-opus-4-20250514" is Opus 4's dated id; "claude-opus-4-0" and "-4-1" are aliases.
  {
    family: "claude-opus-4 / 4.1",
    pattern: /claude-opus-4-(?:[01](?!\d)|20\d{6})/,
    prices: price(15, 75, 18.75, 1.5),
  },
  { family: "claude-opus-4.5+", pattern: /claude-opus-4/, prices: price(5, 25, 6.25, 0.5) },
  { family: "claude-sonnet-4.x", pattern: /claude-sonnet-4/, prices: price(3, 15, 3.75, 0.3) },
  { family: "claude-haiku-4.x", pattern: /claude-haiku-4/, prices: price(1, 5, 1.25, 0.1) },
  { family: "claude-3-5-haiku", pattern: /claude-3-5-haiku/, prices: price(0.8, 4, 1, 0.08) },
];

/** The table's prices for `model`, or undefined for a model it does not know. */
export function lookupPricing(model: string): ModelPricing | undefined {
  const row = TABLE.find((candidate) => candidate.pattern.test(model));
  return row === undefined ? undefined : { ...row.prices, source: row.family };
}

const ENV = {
  inputPerMTok: "HARNESS_PRICE_INPUT",
  outputPerMTok: "HARNESS_PRICE_OUTPUT",
  cacheWritePerMTok: "HARNESS_PRICE_CACHE_WRITE",
  cacheReadPerMTok: "HARNESS_PRICE_CACHE_READ",
} as const satisfies Record<keyof Prices, string>;

/** The env var names that override prices, for messages. */
export const PRICE_ENV_VARS: readonly string[] = Object.values(ENV);

/**
 * The prices for `model`: the table's, with any `HARNESS_PRICE_*` env var winning (for a new model, a
 * discount, or a compatible endpoint). For a model the table does not know, input and output prices are
 * required; the cache prices then default to the API's multipliers (write 1.25×, read 0.1× input).
 * Returns undefined when the model is unknown and no price is set.
 */
export function resolvePricing(model: string, env: NodeJS.ProcessEnv): ModelPricing | undefined {
  const given: Partial<Prices> = {};
  for (const [field, name] of Object.entries(ENV) as Array<[keyof Prices, string]>) {
    const value = env[name]?.trim();
    if (value === undefined || value === "") continue;
    const n = Number(value);
    if (!Number.isFinite(n) || n < 0) {
      throw new ConfigError(`${name} must be a price in USD per million tokens (>= 0), got '${value}'`);
    }
    given[field] = n;
  }
  const table = lookupPricing(model);
  if (Object.keys(given).length === 0) return table;
  if (table !== undefined) return { ...table, ...given, source: `${table.source} + HARNESS_PRICE_*` };
  const { inputPerMTok, outputPerMTok } = given;
  if (inputPerMTok === undefined || outputPerMTok === undefined) {
    throw new ConfigError(
      `no price is known for model '${model}': set both HARNESS_PRICE_INPUT and HARNESS_PRICE_OUTPUT (USD per million tokens)`,
    );
  }
  return {
    inputPerMTok,
    outputPerMTok,
    cacheWritePerMTok: given.cacheWritePerMTok ?? inputPerMTok * 1.25,
    cacheReadPerMTok: given.cacheReadPerMTok ?? inputPerMTok * 0.1,
    source: "HARNESS_PRICE_*",
  };
}

/** The cost of `usage` in USD, rounded to a billionth of a dollar so sums print without float noise. */
export function costUsd(pricing: ModelPricing, usage: Readonly<TokenUsage>): number {
  const micro =
    usage.inputTokens * pricing.inputPerMTok +
    usage.outputTokens * pricing.outputPerMTok +
    usage.cacheCreationInputTokens * pricing.cacheWritePerMTok +
    usage.cacheReadInputTokens * pricing.cacheReadPerMTok;
  return Math.round(micro * 1000) / 1e9;
}

/** A cost for people: two significant digits under a dollar ("$0.00011", "$0.052"), cents above. */
export function formatUsd(usd: number): string {
  return `$${usd < 1 ? Number(usd.toPrecision(2)) : usd.toFixed(2)}`;
}
