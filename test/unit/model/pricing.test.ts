import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../src/errors.js";
import { costUsd, formatUsd, lookupPricing, resolvePricing } from "../../../src/model/pricing.js";

const usage = (inputTokens: number, outputTokens: number, cacheRead = 0, cacheWrite = 0) => ({
  inputTokens,
  outputTokens,
  cacheReadInputTokens: cacheRead,
  cacheCreationInputTokens: cacheWrite,
});

describe("lookupPricing", () => {
  it.each([
    ["claude-opus-4-20250514", 15, 75],
    ["claude-opus-4-0", 15, 75],
    ["claude-opus-4-1-20250805", 15, 75],
    ["claude-opus-4-1@20250805", 15, 75],
    ["claude-opus-4-5-20251101", 5, 25],
    ["claude-opus-4-8", 5, 25],
    ["claude-sonnet-4-5-20250929", 3, 15],
    ["anthropic.claude-sonnet-4-6-v1:0", 3, 15],
    ["claude-haiku-4-5", 1, 5],
    ["claude-3-5-haiku-20241022", 0.8, 4],
  ])("prices %s by its family", (model, input, output) => {
    expect(lookupPricing(model)).toMatchObject({ inputPerMTok: input, outputPerMTok: output });
  });

  it("knows nothing about other models, rather than guessing", () => {
    expect(lookupPricing("claude-sonnet-5-5")).toBeUndefined();
    expect(lookupPricing("claude-test-model")).toBeUndefined();
  });
});

describe("resolvePricing", () => {
  it("lets each HARNESS_PRICE_* variable override one table price", () => {
    const pricing = resolvePricing("claude-sonnet-4-5", { HARNESS_PRICE_OUTPUT: "10" });
    expect(pricing).toMatchObject({ inputPerMTok: 3, outputPerMTok: 10, cacheWritePerMTok: 3.75 });
    expect(pricing?.source).toContain("HARNESS_PRICE_*");
  });

  it("prices an unknown model from env, cache prices defaulting to the API's multipliers", () => {
    const pricing = resolvePricing("my-proxy-model", { HARNESS_PRICE_INPUT: "2", HARNESS_PRICE_OUTPUT: "8" });
    expect(pricing).toMatchObject({ inputPerMTok: 2, outputPerMTok: 8, cacheWritePerMTok: 2.5 });
    expect(pricing?.cacheReadPerMTok).toBeCloseTo(0.2);
  });

  it("returns undefined for an unknown model without env prices", () => {
    expect(resolvePricing("my-proxy-model", {})).toBeUndefined();
  });

  it("refuses half a price list for an unknown model, and prices that are not numbers", () => {
    expect(() => resolvePricing("my-proxy-model", { HARNESS_PRICE_INPUT: "2" })).toThrow(ConfigError);
    expect(() => resolvePricing("claude-haiku-4-5", { HARNESS_PRICE_INPUT: "cheap" })).toThrow(
      /HARNESS_PRICE_INPUT must be a price/,
    );
    expect(() => resolvePricing("claude-haiku-4-5", { HARNESS_PRICE_CACHE_READ: "-1" })).toThrow(ConfigError);
  });
});

describe("costUsd", () => {
  it("prices every kind of token at its own rate", () => {
    const sonnet = lookupPricing("claude-sonnet-4-5");
    if (sonnet === undefined) throw new Error("sonnet should be priced");
    // 1M of each: 3 + 15 + 0.30 (cache read) + 3.75 (cache write).
    expect(costUsd(sonnet, usage(1e6, 1e6, 1e6, 1e6))).toBe(22.05);
    expect(costUsd(sonnet, usage(10, 5))).toBe(0.000105);
  });

  it("formats small and large costs for people", () => {
    expect(formatUsd(0.000105)).toBe("$0.00011");
    expect(formatUsd(0.0523)).toBe("$0.052");
    expect(formatUsd(3.456)).toBe("$3.46");
  });
});
