import { describe, expect, it } from "vitest";
import { egressEnv } from "../../../../../src/sandbox/docker/egress/egress-env.js";

describe("egressEnv", () => {
  it("points both spellings of the proxy variables, and npm's and Yarn's own, at the relay's port", () => {
    const env = new Map(
      egressEnv(40123).map((entry) => entry.split(/=(.*)/s).slice(0, 2) as [string, string]),
    );
    for (const name of [
      "HTTP_PROXY",
      "http_proxy",
      "HTTPS_PROXY",
      "https_proxy",
      "npm_config_proxy",
      "npm_config_https_proxy",
      "YARN_HTTP_PROXY",
      "YARN_HTTPS_PROXY",
    ]) {
      expect(env.get(name), name).toBe("http://127.0.0.1:40123");
    }
    expect(env.get("NO_PROXY")).toBe("localhost,127.0.0.1,::1");
    expect(env.get("no_proxy")).toBe("localhost,127.0.0.1,::1");
  });

  it("sets no pip proxy option (pip reads HTTPS_PROXY; its own option can make it ignore the environment)", () => {
    expect(egressEnv(1).some((entry) => entry.startsWith("PIP_"))).toBe(false);
  });

  it("gives each variable once", () => {
    const names = egressEnv(1).map((entry) => entry.split("=")[0]);
    expect(new Set(names).size).toBe(names.length);
  });
});
