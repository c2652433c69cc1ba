/**
 * The settings table (src/settings/) is the one place a setting is declared: these check that what
 * is derived from it agrees with it, so a new entry cannot half-land.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Option } from "commander";
import { describe, expect, expectTypeOf, it } from "vitest";
import { isGuardedKey, wideningFlag } from "../../../src/cli/dotenv/dotenv-keys.js";
import { type CliFlags, loadAgentConfig, loadSandboxConfig } from "../../../src/config.js";
import { SANDBOX_DEFAULTS } from "../../../src/sandbox/sandbox-request.js";
import { settingOptions } from "../../../src/settings/commander-options.js";
import { envExampleText } from "../../../src/settings/env-example.js";
import { SETTING_LIST, SETTINGS, TASK_KEYS } from "../../../src/settings/settings.js";

const root = (path: string) => fileURLToPath(new URL(`../../../${path}`, import.meta.url));
const withFlag = SETTING_LIST.filter((s) => s.flag !== undefined);

describe("the settings table", () => {
  it.each(withFlag.map((s) => [s.key, s.flag ?? ""]))("%s is the key commander gives %s", (key, flag) => {
    expect(new Option(flag).attributeName()).toBe(key);
  });

  it("types each flag as commander gives it: text, texts, or a switch", () => {
    expectTypeOf<CliFlags["timeout"]>().toEqualTypeOf<string | undefined>();
    expectTypeOf<CliFlags["workspace"]>().toEqualTypeOf<string | undefined>();
    expectTypeOf<CliFlags["allowHost"]>().toEqualTypeOf<string[] | undefined>();
    expectTypeOf<CliFlags["block"]>().toEqualTypeOf<string[] | undefined>();
    expectTypeOf<CliFlags["protect"]>().toEqualTypeOf<string[] | false | undefined>();
    expectTypeOf<CliFlags["apply"]>().toEqualTypeOf<boolean | undefined>();
    expectTypeOf<CliFlags["blocklist"]>().toEqualTypeOf<boolean | undefined>();
    expectTypeOf<CliFlags["allowPrivate"]>().toEqualTypeOf<boolean | undefined>();
    expectTypeOf<CliFlags>().not.toHaveProperty("apiKey");
  });

  it("names each flag and each variable once", () => {
    const flags = withFlag.map((s) => new Option(s.flag ?? "").long);
    const envs = SETTING_LIST.flatMap((s) => (s.env === undefined ? [] : [s.env]));
    expect(new Set(flags).size).toBe(flags.length);
    expect(new Set(envs).size).toBe(envs.length);
  });

  it("shows each default in the help from the table, with the variable", () => {
    const [timeout] = settingOptions(["timeout"]);
    expect(timeout?.description).toBe(
      `per-command timeout in seconds (default ${SANDBOX_DEFAULTS.timeoutMs / 1000}; env HARNESS_TIMEOUT)`,
    );
    const [memory] = settingOptions(["memory"]);
    expect(memory?.description).toMatch(/\(default 2g; env HARNESS_MEMORY\)$/);
    const [maxTurns] = settingOptions(["maxTurns"], { maxTurns: "per task: stop" });
    expect(maxTurns?.description).toBe("per task: stop (default 50; env HARNESS_MAX_TURNS)");
  });

  it("gives --no- forms and choices where the table asks", () => {
    const options = settingOptions(["protect", "apply", "isolation", "blocklist"]);
    expect(options.map((o) => o.flags)).toEqual([
      "--protect <path>",
      "--no-protect",
      "--apply",
      "--no-apply",
      "--isolation <mode>",
      "--no-blocklist",
    ]);
    expect(options.find((o) => o.long === "--isolation")?.argChoices).toEqual(["bind", "copy"]);
  });

  it("applies the table's defaults and reads each variable it names", () => {
    const agent = loadAgentConfig({ ANTHROPIC_API_KEY: "k", MODEL_ID: "m" }, {});
    expect(agent).toMatchObject({
      maxTurns: SETTINGS.maxTurns.default,
      maxTokens: SETTINGS.maxTokens.default,
      outputFormat: SETTINGS.outputFormat.default,
    });
    const env = { ANTHROPIC_API_KEY: "k", MODEL_ID: "m", HARNESS_MAX_TURNS: "7", HARNESS_MAX_TOKENS: "9" };
    expect(loadAgentConfig(env, { maxTurns: "8" })).toMatchObject({ maxTurns: 8, maxTokens: 9 });
    const sandbox = loadSandboxConfig(
      { HARNESS_PIDS: "64", HARNESS_CPUS: "1.5", HARNESS_RUNTIME: "runsc" },
      {},
    );
    expect(sandbox).toMatchObject({ pidsLimit: 64, cpus: 1.5, runtime: "runsc" });
  });

  it("lets a batch task set its perTask settings, never a widening one", () => {
    expect(TASK_KEYS).toEqual([
      "model",
      "maxTurns",
      "maxTokens",
      "maxTotalTokens",
      "contextWindow",
      "contextManagement",
      "thinking",
      "effort",
      "tools",
      "maxBudgetUsd",
      "image",
      "memory",
      "cpus",
      "timeout",
      "network",
      "isolation",
    ]);
    for (const s of SETTING_LIST.filter((s) => s.widens !== undefined && s.widens.unless === undefined)) {
      expect(TASK_KEYS).not.toContain(s.key);
    }
  });

  it("keeps widening variables out of every .env, and MODEL_ID free", () => {
    for (const [key, flag] of [
      ["HARNESS_NETWORK", "--network"],
      ["HARNESS_ALLOW_HOSTS", "--allow-host"],
      ["HARNESS_ALLOW", "--allow"],
      ["HARNESS_SECRETS", "--secret"],
    ] as const) {
      expect(wideningFlag(key, "x")).toBe(flag);
      expect(isGuardedKey(key)).toBe(false);
    }
    expect(wideningFlag("HARNESS_NETWORK", " none ")).toBeUndefined();
    expect(isGuardedKey("MODEL_ID")).toBe(false);
    expect(isGuardedKey("HARNESS_IMAGE")).toBe(true);
    expect(isGuardedKey("ANTHROPIC_BASE_URL")).toBe(true);
  });
});

describe(".env.example", () => {
  it("is what the table makes (run `npm run gen:env-example` after changing a setting)", () => {
    expect(readFileSync(root(".env.example"), "utf8")).toBe(envExampleText());
  });

  it("sets no widening variable, and names each of them", () => {
    const text = envExampleText();
    for (const s of SETTING_LIST.filter((s) => s.widens !== undefined && s.env !== undefined)) {
      expect(text).not.toMatch(new RegExp(`^#? ?${s.env}=`, "m"));
      expect(text).toContain(`${s.env} (`);
    }
  });
});
