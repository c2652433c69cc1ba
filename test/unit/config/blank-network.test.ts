/**
 * A blank HARNESS_NETWORK is unset, never a network mode. The `.env` policy lets `HARNESS_NETWORK=`
 * through (an empty value widens nothing), and Docker reads an empty NetworkMode as its default
 * bridge: before, a `.env` a sandbox wrote with that one line gave the next run a network.
 */
import { describe, expect, it } from "vitest";
import { decideDotenv } from "../../../src/cli/dotenv/dotenv-policy.js";
import { loadSandboxConfig } from "../../../src/config.js";
import { ConfigError } from "../../../src/errors.js";
import { containerCreateOptions } from "../../../src/sandbox/docker/container/container-spec.js";
import { SANDBOX_DEFAULTS } from "../../../src/sandbox/sandbox-request.js";

const w = { workspace: "/w" };

/** What a `.env` of doubtful origin (a sandbox wrote it) sets, as `harness` loads it. */
function fromPlantedDotenv(parsed: Record<string, string>): NodeJS.ProcessEnv {
  const facts = {
    kind: "file",
    parsed,
    doubt: { kind: "sandbox-wrote" },
    changed: true,
    firstSeen: false,
  } as const;
  return decideDotenv("/w/.env", facts).load;
}

describe("a blank network setting", () => {
  it.each(["", " ", "\t", " none ", "none\n"])(
    "HARNESS_NETWORK=%j from a .env leaves the network none",
    (value) => {
      const env = fromPlantedDotenv({ HARNESS_NETWORK: value });
      const config = loadSandboxConfig(env, w);
      expect(config.network).toBe("none");
    },
  );

  it("gives the container no network interface (NetworkMode none, networking disabled)", () => {
    const config = loadSandboxConfig({ HARNESS_NETWORK: "" }, w);
    const create = containerCreateOptions({
      ...SANDBOX_DEFAULTS,
      ...config,
      image: "img",
      user: "1000:1000",
    } as never);
    expect(create.HostConfig?.NetworkMode).toBe("none");
    expect(create.NetworkDisabled).toBe(true);
  });

  it("refuses an empty --network flag rather than passing it to Docker", () => {
    expect(() => loadSandboxConfig({}, { ...w, network: "" })).toThrow(ConfigError);
    expect(() => loadSandboxConfig({}, { ...w, network: "  " })).toThrow(/--network must be/);
  });

  it("treats every other blank variable as unset too", () => {
    const env = { HARNESS_MEMORY: "", HARNESS_IMAGE: " ", HARNESS_RUNTIME: "", HARNESS_WORKSPACE: "" };
    const config = loadSandboxConfig(env, {});
    expect(config).toMatchObject({ image: undefined, runtime: undefined, memoryBytes: undefined });
    expect(config.workspace).toBe(process.cwd());
  });
});
