import { describe, expect, it } from "vitest";
import { loadSandboxConfig } from "../../../src/config.js";
import { ConfigError } from "../../../src/errors.js";

describe("loadSandboxConfig", () => {
  it("takes flags over env, and env over defaults", () => {
    const env = { HARNESS_NETWORK: "bridge", HARNESS_TIMEOUT: "30", HARNESS_TMP_SIZE: "64m" };
    const fromEnv = loadSandboxConfig(env, { workspace: "/w" });
    expect(fromEnv).toMatchObject({ network: "bridge", timeoutMs: 30_000, tmpSizeMiB: 64 });
    const fromFlags = loadSandboxConfig(env, {
      workspace: "/w",
      network: "none",
      timeout: "1.5",
      tmpSize: "1g",
    });
    expect(fromFlags).toMatchObject({ network: "none", timeoutMs: 1500, tmpSizeMiB: 1024 });
    expect(loadSandboxConfig({}, { workspace: "/w" })).toMatchObject({ network: "none", timeoutMs: 120_000 });
  });

  it("refuses a timeout Node's timers cannot hold, instead of timing out at once", () => {
    expect(() => loadSandboxConfig({}, { workspace: "/w", timeout: "3000000" })).toThrow(ConfigError);
    expect(() => loadSandboxConfig({}, { workspace: "/w", timeout: "3000000" })).toThrow(
      /at most 2147483 seconds/,
    );
    expect(loadSandboxConfig({}, { workspace: "/w", timeout: "2147483" }).timeoutMs).toBe(2_147_483_000);
  });

  it("refuses malformed values with the flag's name", () => {
    expect(() => loadSandboxConfig({}, { workspace: "/w", user: "root" })).toThrow(
      /--user must be UID or UID:GID/,
    );
    expect(() => loadSandboxConfig({}, { workspace: "/w", memory: "lots" })).toThrow(/--memory/);
    expect(() => loadSandboxConfig({}, { workspace: "/w", pids: "-1" })).toThrow(/--pids/);
  });
});
