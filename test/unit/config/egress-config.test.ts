import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadSandboxConfig } from "../../../src/config.js";
import { ConfigError } from "../../../src/errors.js";
import { SANDBOX_DEFAULTS } from "../../../src/sandbox/sandbox-request.js";

const w = { workspace: "/w" };
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A PATH holding only a fake npm that prints `registry` (and counts its calls in a file). */
function fakeNpmPath(registry: string): { PATH: string; calls: () => number } {
  const bin = mkdtempSync(join(tmpdir(), "harness-egress-config-"));
  dirs.push(bin);
  const log = join(bin, "calls");
  writeFileSync(log, "");
  writeFileSync(
    join(bin, "npm"),
    `#!/bin/sh\necho x >> '${log}'\nif [ "$2" = get ]; then echo '${registry}'; else echo '{}'; fi\n`,
  );
  chmodSync(join(bin, "npm"), 0o755);
  return {
    PATH: bin,
    calls: () => readFileSync(log, "utf8").split("\n").filter(Boolean).length,
  };
}

describe("loadSandboxConfig: allowlist mode", () => {
  it("has no egress without an allow entry", () => {
    expect(loadSandboxConfig({}, w).egress).toBeUndefined();
    expect(loadSandboxConfig({ HARNESS_ALLOW_HOSTS: " , " }, w).egress).toBeUndefined();
    // A limit in a shared .env does nothing on its own.
    expect(loadSandboxConfig({ HARNESS_EGRESS_LIMIT: "1g" }, w).egress).toBeUndefined();
    // Compose passes unset variables through as "".
    const compose = { HARNESS_ALLOW_HOSTS: "example.com", HARNESS_ALLOW: "", HARNESS_EGRESS_LIMIT: "" };
    expect(loadSandboxConfig(compose, w).egress?.limitBytes).toBe(SANDBOX_DEFAULTS.egressLimitBytes);
  });

  it("takes --allow-host entries, normalized and without repeats, with the default limit", () => {
    const config = loadSandboxConfig(
      {},
      { ...w, allowHost: ["Example.COM", "example.com", "*.example.org:8443"] },
    );
    expect(config.egress).toEqual({
      allowHosts: ["example.com:443,80", "*.example.org:8443"],
      allowPrivate: false,
      limitBytes: SANDBOX_DEFAULTS.egressLimitBytes,
    });
    expect(config.network).toBe("none");
  });

  it("reads HARNESS_ALLOW_HOSTS and HARNESS_EGRESS_LIMIT, and flags win over them", () => {
    const env = { HARNESS_ALLOW_HOSTS: "example.com, 127.0.0.1:8080", HARNESS_EGRESS_LIMIT: "10m" };
    expect(loadSandboxConfig(env, w).egress).toMatchObject({
      allowHosts: ["example.com:443,80", "127.0.0.1:8080"],
      limitBytes: 10 * 1024 ** 2,
    });
    const flags = { ...w, allowHost: ["example.org"], egressLimit: "1k" };
    expect(loadSandboxConfig(env, flags).egress).toMatchObject({
      allowHosts: ["example.org:443,80"],
      limitBytes: 1024,
    });
  });

  it("takes --allow-private from the flag only, never from the environment", () => {
    const env = { HARNESS_ALLOW_HOSTS: "example.com", HARNESS_ALLOW_PRIVATE: "1" };
    expect(loadSandboxConfig(env, w).egress?.allowPrivate).toBe(false);
    expect(loadSandboxConfig(env, { ...w, allowPrivate: true }).egress?.allowPrivate).toBe(true);
  });

  it("takes --egress-wildcard-names from the flag only, never from the environment", () => {
    const env = { HARNESS_ALLOW_HOSTS: "*.example.org", HARNESS_EGRESS_WILDCARD_NAMES: "100000" };
    expect(loadSandboxConfig(env, w).egress?.wildcardNames).toBeUndefined();
    expect(loadSandboxConfig(env, { ...w, egressWildcardNames: "200" }).egress?.wildcardNames).toBe(200);
    for (const bad of ["0", "-1", "1.5", "lots"]) {
      expect(() => loadSandboxConfig(env, { ...w, egressWildcardNames: bad })).toThrow(
        /--egress-wildcard-names must be a positive whole number/,
      );
    }
    expect(() => loadSandboxConfig({}, { ...w, egressWildcardNames: "10" })).toThrow(
      "--egress-wildcard-names needs an --allow-host or --allow entry",
    );
  });

  it("refuses bad entries, naming the flag or variable and the reason", () => {
    const bad = (allowHost: string[]) => () => loadSandboxConfig({}, { ...w, allowHost });
    expect(bad(["https://example.com/"])).toThrow(ConfigError);
    expect(bad(["https://example.com/"])).toThrow(
      /--allow-host 'https:\/\/example.com\/': give a host name, not a URL/,
    );
    expect(bad(["*"])).toThrow(/--allow-host '\*'.*every host/);
    expect(bad(["example.com:0"])).toThrow(/--allow-host 'example.com:0'.*port/);
    expect(() => loadSandboxConfig({ HARNESS_ALLOW_HOSTS: "a..b" }, w)).toThrow(
      /^HARNESS_ALLOW_HOSTS 'a..b'/,
    );
  });

  it("refuses unknown presets, and a limit that is not a size", () => {
    expect(() => loadSandboxConfig({}, { ...w, allow: ["gradle"] })).toThrow(
      "--allow must be npm, pypi (or pip), go, cargo, maven, git=HOST, got 'gradle'",
    );
    expect(() => loadSandboxConfig({ HARNESS_ALLOW: "npm,nope" }, w)).toThrow(/got 'nope'/);
    expect(() => loadSandboxConfig({}, { ...w, allowHost: ["example.com"], egressLimit: "lots" })).toThrow(
      /--egress-limit must look like 500m or 2g/,
    );
  });

  it("refuses allowlist mode with another network, and its options without an entry", () => {
    expect(() => loadSandboxConfig({}, { ...w, allowHost: ["example.com"], network: "bridge" })).toThrow(
      /--allow-host and --allow need --network none .*got --network bridge/,
    );
    expect(() =>
      loadSandboxConfig({ HARNESS_NETWORK: "host" }, { ...w, allow: ["git=example.com"] }),
    ).toThrow(/got --network host/);
    expect(() => loadSandboxConfig({}, { ...w, allowHost: ["example.com"], network: "none" })).not.toThrow();
    expect(() => loadSandboxConfig({}, { ...w, allowPrivate: true })).toThrow(
      "--allow-private and --egress-limit need an --allow-host or --allow entry",
    );
    expect(() => loadSandboxConfig({}, { ...w, egressLimit: "1g" })).toThrow(/need an --allow-host/);
  });

  it("resolves presets through the host's tools, after every other check", () => {
    const npm = fakeNpmPath("http://127.0.0.1:4873/");
    const config = loadSandboxConfig({ PATH: npm.PATH }, { ...w, allow: ["npm", "git=git.example.com"] });
    expect(config.egress?.allowHosts).toEqual(["127.0.0.1:4873", "git.example.com:443,80"]);
    const before = npm.calls();
    expect(() => loadSandboxConfig({ PATH: npm.PATH }, { ...w, allow: ["npm"], network: "bridge" })).toThrow(
      /--network none/,
    );
    expect(npm.calls()).toBe(before);
  });

  it("gives the sandbox's tools the presets' variables, and a replay the recorded ones it may set", () => {
    const npm = fakeNpmPath("http://127.0.0.1:4873/");
    const config = loadSandboxConfig({ PATH: npm.PATH }, { ...w, allow: ["npm", "git=git.example.com"] });
    expect(config.egress?.clientEnv).toEqual([
      "npm_config_registry=http://127.0.0.1:4873/",
      "COREPACK_NPM_REGISTRY=http://127.0.0.1:4873",
      "YARN_NPM_REGISTRY_SERVER=http://127.0.0.1:4873",
    ]);
    expect(loadSandboxConfig({}, { ...w, allowHost: ["example.com"] }).egress?.clientEnv).toBeUndefined();
    const inheritEgress = {
      allowHosts: ["127.0.0.1:4873"],
      limitBytes: 4096,
      clientEnv: ["npm_config_registry=http://127.0.0.1:4873/", "LD_PRELOAD=/workspace/x.so"],
    };
    expect(loadSandboxConfig({}, w, { inheritEgress }).egress?.clientEnv).toEqual([
      "npm_config_registry=http://127.0.0.1:4873/",
    ]);
  });

  it("refuses a preset whose tool gives an entry the allowlist does not accept", () => {
    const npm = fakeNpmPath("https://*.example.com/");
    expect(() => loadSandboxConfig({ PATH: npm.PATH }, { ...w, allow: ["npm"] })).toThrow(/^--allow npm: /);
    const odd = fakeNpmPath("http://[fe80::1%25eth0]:4873/");
    expect(() => loadSandboxConfig({ PATH: odd.PATH }, { ...w, allow: ["npm"] })).toThrow(/^--allow npm/);
  });

  it("inherits a recorded allowlist only when flags and env name none and the network is none", () => {
    const inheritEgress = { allowHosts: ["example.com:443,80"], limitBytes: 4096 };
    expect(loadSandboxConfig({}, w, { inheritEgress }).egress).toEqual({
      allowHosts: ["example.com:443,80"],
      allowPrivate: false,
      limitBytes: 4096,
      inherited: true,
    });
    expect(
      loadSandboxConfig({}, { ...w, allowPrivate: true, egressLimit: "1k" }, { inheritEgress }).egress,
    ).toMatchObject({
      allowPrivate: true,
      limitBytes: 1024,
      inherited: true,
    });
    const own = loadSandboxConfig({}, { ...w, allowHost: ["example.org"] }, { inheritEgress }).egress;
    expect(own).toEqual({
      allowHosts: ["example.org:443,80"],
      allowPrivate: false,
      limitBytes: SANDBOX_DEFAULTS.egressLimitBytes,
    });
    expect(loadSandboxConfig({}, { ...w, network: "bridge" }, { inheritEgress }).egress).toBeUndefined();
    expect(() =>
      loadSandboxConfig({}, w, { inheritEgress: { allowHosts: ["http://evil.example/"], limitBytes: 1 } }),
    ).toThrow(/the recorded allow entry 'http:\/\/evil.example\/'/);
  });
});
