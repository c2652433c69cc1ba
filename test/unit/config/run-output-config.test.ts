import { describe, expect, it } from "vitest";
import { loadAgentConfig } from "../../../src/config.js";
import { ConfigError } from "../../../src/errors.js";

const env = { ANTHROPIC_API_KEY: "sk-ant-test", MODEL_ID: "claude-sonnet-4-5" };

describe("loadAgentConfig: output format", () => {
  it("defaults to text, reads HARNESS_OUTPUT_FORMAT, and lets the flag win", () => {
    expect(loadAgentConfig(env, {}).outputFormat).toBe("text");
    expect(loadAgentConfig({ ...env, HARNESS_OUTPUT_FORMAT: "json" }, {}).outputFormat).toBe("json");
    const both = loadAgentConfig({ ...env, HARNESS_OUTPUT_FORMAT: "json" }, { outputFormat: "stream-json" });
    expect(both.outputFormat).toBe("stream-json");
  });

  it("rejects any other format, naming the valid ones", () => {
    expect(() => loadAgentConfig(env, { outputFormat: "xml" })).toThrow(
      "--output-format must be text, json, stream-json, got 'xml'",
    );
  });
});

describe("loadAgentConfig: cost budget", () => {
  it("takes --max-budget-usd (or HARNESS_MAX_BUDGET_USD) for a priced model", () => {
    const config = loadAgentConfig({ ...env, HARNESS_MAX_BUDGET_USD: "0.5" }, {});
    expect(config.maxBudgetUsd).toBe(0.5);
    expect(config.pricing).toMatchObject({ inputPerMTok: 3, outputPerMTok: 15 });
    expect(
      loadAgentConfig({ ...env, HARNESS_MAX_BUDGET_USD: "0.5" }, { maxBudgetUsd: "2" }).maxBudgetUsd,
    ).toBe(2);
  });

  it("rejects a budget that is not a positive number", () => {
    expect(() => loadAgentConfig(env, { maxBudgetUsd: "0" })).toThrow(ConfigError);
    expect(() => loadAgentConfig(env, { maxBudgetUsd: "lots" })).toThrow(
      /--max-budget-usd must be a positive number/,
    );
  });

  it("refuses a budget for a model without prices, saying which env vars to set", () => {
    const unknown = { ...env, MODEL_ID: "my-proxy-model" };
    expect(loadAgentConfig(unknown, {}).pricing).toBeUndefined();
    expect(() => loadAgentConfig(unknown, { maxBudgetUsd: "1" })).toThrow(
      /--max-budget-usd needs prices.*'my-proxy-model'.*HARNESS_PRICE_INPUT, HARNESS_PRICE_OUTPUT/,
    );
    const priced = { ...unknown, HARNESS_PRICE_INPUT: "1", HARNESS_PRICE_OUTPUT: "2" };
    expect(loadAgentConfig(priced, { maxBudgetUsd: "1" }).maxBudgetUsd).toBe(1);
  });
});
