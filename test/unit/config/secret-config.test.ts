import { describe, expect, it } from "vitest";
import { isGuardedKey, wideningFlag } from "../../../src/cli/dotenv/dotenv-keys.js";
import { runStartEgress } from "../../../src/cli/setup/run-setup.js";
import { loadSandboxConfig } from "../../../src/config.js";
import { ConfigError } from "../../../src/errors.js";

const w = { workspace: "/w" };

describe("--secret", () => {
  it("reads the value from the environment, allows the host, and never shows the value", () => {
    const config = loadSandboxConfig(
      { NPM_TOKEN: "npm_REAL" },
      { ...w, secret: ["NPM_TOKEN@registry.example.org"] },
    );
    const secret = config.egress?.secrets?.[0];
    expect(secret).toMatchObject({ name: "NPM_TOKEN", host: "registry.example.org:443,80", inBody: false });
    expect(secret?.value.reveal()).toBe("npm_REAL");
    expect(JSON.stringify(config)).not.toContain("npm_REAL");
    expect(config.egress?.allowHosts).toEqual([]);
    if (config.egress === undefined) throw new Error("no egress");
    expect(runStartEgress(config.egress)).toMatchObject({
      secrets: ["NPM_TOKEN@registry.example.org:443,80"],
    });
    expect(JSON.stringify(runStartEgress(config.egress))).not.toContain("npm_REAL");
  });

  it("takes HARNESS_SECRETS (space-separated) when no flag is given; the flag wins", () => {
    const env = {
      A: "aaaa-1111",
      B: "bbbb-2222",
      HARNESS_SECRETS: "A@a.example.org  B@b.example.org:8443,443",
    };
    expect(loadSandboxConfig(env, w).egress?.secrets?.map((s) => s.host)).toEqual([
      "a.example.org:443,80",
      "b.example.org:8443,443",
    ]);
    expect(
      loadSandboxConfig(env, { ...w, secret: ["B@c.example.org"] }).egress?.secrets?.map((s) => s.name),
    ).toEqual(["B"]);
  });

  it.each([
    [{}, ["NPM_TOKEN@registry.example.org"], /NPM_TOKEN is not set/],
    [{ X: "xxxx-1111" }, ["X@*.example.org"], /one host, not a wildcard/],
    [{ X: "xxxx-1111" }, ["X"], /NAME@HOST/],
    [{ X: "xxxx-1111" }, ["X@a.example.org", "X@b.example.org"], /given twice/],
    [{ X: "aaaa\nbbbb" }, ["X@a.example.org"], /line break/],
    [{ X: "short" }, ["X@a.example.org"], /shorter than 8/],
  ])("refuses %o %o", (env, secret, message) => {
    if (message === undefined) {
      expect(() => loadSandboxConfig(env, { ...w, secret })).not.toThrow();
      return;
    }
    expect(() => loadSandboxConfig(env, { ...w, secret })).toThrow(ConfigError);
    expect(() => loadSandboxConfig(env, { ...w, secret })).toThrow(message);
  });

  it("needs --network none, and --secret-in-body names a secret", () => {
    expect(() =>
      loadSandboxConfig({ X: "xxxx-1111" }, { ...w, network: "bridge", secret: ["X@a.example.org"] }),
    ).toThrow(/--network none/);
    expect(() =>
      loadSandboxConfig({ X: "xxxx-1111" }, { ...w, secret: ["X@a.example.org"], secretInBody: ["Y"] }),
    ).toThrow(/--secret-in-body Y/);
    expect(
      loadSandboxConfig({ X: "xxxx-1111" }, { ...w, secret: ["X@a.example.org"], secretInBody: ["X"] }).egress
        ?.secrets?.[0]?.inBody,
    ).toBe(true);
  });

  it("is a widening key: a .env a sandbox may have written cannot set HARNESS_SECRETS", () => {
    expect(wideningFlag("HARNESS_SECRETS", "X@evil.example.org")).toBe("--secret");
    // A secret's own variable is a key like any other: a doubtful .env never sets it either.
    expect(isGuardedKey("NPM_TOKEN")).toBe(true);
  });
});
