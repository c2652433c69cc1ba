/** What a run learns about its model, and what follows: tools, context strategy, refusals in one line. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { modelSetup } from "../../../src/cli/setup/model-setup.js";
import { type CliFlags, loadAgentConfig } from "../../../src/config.js";
import { ConfigError } from "../../../src/errors.js";
import { lookupModel, type ModelLookup } from "../../../src/model/model-catalog.js";
import {
  type ModelCapabilities,
  type ModelProfile,
  profileFromModelInfo,
} from "../../../src/model/model-profile.js";
import { modelCache } from "../../../src/state/model-cache.js";

const ENV = { ANTHROPIC_API_KEY: "sk-ant-x", MODEL_ID: "claude-sonnet-4-6" };
const config = (flags: CliFlags = {}) => loadAgentConfig(ENV, flags);
const CAPS: ModelCapabilities = {
  compaction: true,
  clearToolUses: true,
  thinkingAdaptive: true,
  thinkingEnabled: false,
  thinkingDisabled: true,
  effort: ["low", "medium", "high"],
};
const answered = (window: number, caps: Partial<ModelCapabilities> = {}): ModelLookup => ({
  profile: { id: "m", contextWindow: window, windowSource: "models-api", capabilities: { ...CAPS, ...caps } },
  modelsApi: true,
});
const unanswered = (window = 200_000): ModelLookup => ({
  profile: { id: "m", contextWindow: window, windowSource: "table" },
  modelsApi: false,
});

describe("settings", () => {
  it("reads --thinking as adaptive, off or a budget, and refuses a budget not below --max-tokens", () => {
    expect(config({ thinking: "adaptive" }).thinking).toEqual({ type: "adaptive" });
    expect(config({ thinking: "off" }).thinking).toEqual({ type: "disabled" });
    expect(config({ thinking: "4096" }).thinking).toEqual({ type: "enabled", budgetTokens: 4096 });
    expect(() => config({ thinking: "500" })).toThrow(
      "--thinking must be adaptive, off or a token budget of 1024 or more, got '500'",
    );
    expect(() => config({ thinking: "9000" })).toThrow(/--thinking 9000 must be below --max-tokens \(8000\)/);
    expect(() => config({ effort: "extreme" })).toThrow(
      "--effort must be low, medium, high, max, got 'extreme'",
    );
  });
});

describe("modelSetup", () => {
  it("gives Anthropic's tools where the endpoint answers the Models API, harness's own elsewhere or when asked", () => {
    expect(modelSetup(config(), answered(200_000)).anthropicTools).toBe(true);
    expect(modelSetup(config(), unanswered()).anthropicTools).toBe(false);
    expect(modelSetup(config({ tools: "custom" }), answered(200_000)).anthropicTools).toBe(false);
    expect(modelSetup(config({ tools: "anthropic" }), unanswered()).anthropicTools).toBe(true);
  });

  it("uses server compaction where the model has it and the window leaves room for its trigger", () => {
    expect(modelSetup(config(), answered(200_000)).context).toEqual({ window: 200_000, strategy: "server" });
    expect(modelSetup(config(), answered(24_000)).context).toEqual({ window: 24_000, strategy: "client" });
    expect(modelSetup(config(), answered(200_000, { compaction: false })).context.strategy).toBe("client");
    expect(modelSetup(config(), unanswered()).context.strategy).toBe("client");
    expect(modelSetup(config({ contextManagement: "off" }), answered(200_000)).context.strategy).toBe("off");
  });

  it("refuses in one line what the Models API says the model lacks", () => {
    const refusal = (flags: CliFlags, lookup: ModelLookup) => {
      try {
        modelSetup(config(flags), lookup);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      }
      return "accepted";
    };
    expect(refusal({ thinking: "4096" }, answered(200_000))).toBe(
      "--thinking 4096: the Models API says claude-sonnet-4-6 does not take a thinking budget (use --thinking adaptive)",
    );
    expect(refusal({ thinking: "adaptive" }, answered(200_000, { thinkingAdaptive: false }))).toMatch(
      /^--thinking adaptive: the Models API says claude-sonnet-4-6 does not support adaptive thinking$/,
    );
    expect(refusal({ effort: "max" }, answered(200_000))).toBe(
      "--effort max: the Models API says claude-sonnet-4-6 supports effort low, medium, high only",
    );
    expect(refusal({ contextManagement: "server" }, answered(200_000, { compaction: false }))).toMatch(
      /does not support server-side compaction$/,
    );
    expect(refusal({ contextManagement: "server" }, answered(40_000))).toMatch(
      /leaves no room for the API's smallest compaction trigger/,
    );
    // Without the Models API nothing is assumed: the API itself answers.
    expect(refusal({ thinking: "4096", effort: "max" }, unanswered())).toBe("accepted");
  });
});

describe("lookupModel", () => {
  let state: string | undefined;
  afterEach(() => {
    if (state !== undefined) rmSync(state, { recursive: true, force: true });
  });

  it("asks the Models API once per model and endpoint, remembers an endpoint without it, and lets --context-window win", async () => {
    state = mkdtempSync(join(tmpdir(), "harness-model-cache-"));
    const cache = modelCache({ XDG_STATE_HOME: state });
    const profile: ModelProfile = {
      id: "m",
      contextWindow: 500_000,
      windowSource: "models-api",
      capabilities: CAPS,
    };
    let asked = 0;
    const describe = async () => {
      asked += 1;
      return profile;
    };
    const first = await lookupModel({ model: "m", endpoint: "https://a", describe, cache });
    const again = await lookupModel({ model: "m", endpoint: "https://a", describe, cache });
    expect(asked).toBe(1);
    expect(again).toEqual(first);
    expect(first).toMatchObject({ modelsApi: true, profile: { contextWindow: 500_000 } });
    const flagged = await lookupModel({
      model: "m",
      endpoint: "https://a",
      describe,
      cache,
      contextWindow: 64_000,
    });
    expect(flagged.profile).toMatchObject({
      contextWindow: 64_000,
      windowSource: "flag",
      capabilities: CAPS,
    });

    let missing = 0;
    const none = async () => {
      missing += 1;
      return undefined;
    };
    const table = await lookupModel({
      model: "claude-opus-4-6",
      endpoint: "https://b",
      describe: none,
      cache,
    });
    await lookupModel({ model: "claude-opus-4-6", endpoint: "https://b", describe: none, cache });
    expect(missing).toBe(1);
    expect(table).toEqual({
      modelsApi: false,
      profile: { id: "claude-opus-4-6", contextWindow: 200_000, windowSource: "table" },
    });
  });

  it("falls back to the table when the Models API cannot be asked, says so, and asks again next time", async () => {
    state = mkdtempSync(join(tmpdir(), "harness-model-cache-"));
    const cache = modelCache({ XDG_STATE_HOME: state });
    let asked = 0;
    const failing = async (): Promise<ModelProfile | undefined> => {
      asked += 1;
      throw new Error("cannot reach the API");
    };
    const lookup = await lookupModel({
      model: "some-model",
      endpoint: "https://c",
      describe: failing,
      cache,
    });
    expect(lookup.modelsApi).toBe(false);
    expect(lookup.notice).toMatch(
      /^the Models API could not be asked about some-model \(cannot reach the API\)/,
    );
    await lookupModel({ model: "some-model", endpoint: "https://c", describe: failing, cache });
    expect(asked).toBe(2);
  });
});

describe("profileFromModelInfo", () => {
  it("knows nothing of capabilities a compatible endpoint leaves out, and takes the table's window then", () => {
    const partial = { id: "claude-sonnet-4-6", type: "model" } as unknown as Parameters<
      typeof profileFromModelInfo
    >[1];
    const profile = profileFromModelInfo("claude-sonnet-4-6", partial);
    expect(profile).toEqual({ id: "claude-sonnet-4-6", contextWindow: 200_000, windowSource: "table" });
    const setup = modelSetup(config({ thinking: "4096", effort: "max" }), { profile, modelsApi: true });
    expect(setup.anthropicTools).toBe(true);
  });
});
