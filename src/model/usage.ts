import type { TokenUsage } from "./model-client.js";

/** No tokens yet: the start of a run's running total. Frozen so nobody adds to it in place. */
export const ZERO_USAGE: Readonly<TokenUsage> = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  cacheReadInputTokens: 0,
  cacheCreationInputTokens: 0,
});

/** A new total; neither argument is changed. */
export function addUsage(a: Readonly<TokenUsage>, b: Readonly<TokenUsage>): TokenUsage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadInputTokens: a.cacheReadInputTokens + b.cacheReadInputTokens,
    cacheCreationInputTokens: a.cacheCreationInputTokens + b.cacheCreationInputTokens,
  };
}

/**
 * Every token the run was billed for (input, cache read, cache write, output): what `maxTotalTokens`
 * limits.
 */
export function totalTokens(usage: Readonly<TokenUsage>): number {
  return usage.inputTokens + usage.outputTokens + usage.cacheReadInputTokens + usage.cacheCreationInputTokens;
}
