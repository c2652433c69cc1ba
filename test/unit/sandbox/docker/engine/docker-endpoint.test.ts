import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../../../../src/errors.js";
import { resolveDockerEndpoint } from "../../../../../src/sandbox/docker/engine/docker-endpoint.js";
import { isolationForEngine } from "../../../../../src/sandbox/docker/engine/remote-engine.js";
import { useDockerContext, writeDockerContext } from "../../../../support/docker-context-store.js";

let home: string;
let config: string;
let certs: string;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), "harness-endpoint-"));
  config = join(home, ".docker");
  certs = join(home, "certs");
  mkdirSync(certs);
  for (const file of ["ca.pem", "cert.pem", "key.pem"]) writeFileSync(join(certs, file), `${file} bytes`);
  writeDockerContext(config, { name: "build-host", host: "tcp://192.0.2.10:2376", certDir: certs });
  writeDockerContext(config, { name: "skip", host: "tcp://192.0.2.11:2376", skipTlsVerify: true });
  writeDockerContext(config, { name: "local-alt", host: "unix:///run/other.sock" });
});
afterEach(() => rmSync(home, { recursive: true, force: true }));

describe("resolveDockerEndpoint (the docker CLI's order)", () => {
  it("uses the default socket when nothing names an engine", () => {
    expect(resolveDockerEndpoint({ HOME: home })).toEqual({
      host: "unix:///var/run/docker.sock",
      source: "the default socket",
      tls: undefined,
      remote: false,
    });
  });

  it("takes --context over DOCKER_HOST, and reads the context's TLS files", () => {
    const endpoint = resolveDockerEndpoint({ HOME: home, DOCKER_HOST: "unix:///x.sock" }, "build-host");
    expect(endpoint).toMatchObject({
      host: "tcp://192.0.2.10:2376",
      source: "context 'build-host' (--context)",
    });
    expect(endpoint.remote).toBe(true);
    expect(endpoint.tls?.verify).toBe(true);
    expect(endpoint.tls?.cert?.toString()).toBe("cert.pem bytes");
    expect(endpoint.tls?.ca?.toString()).toBe("ca.pem bytes");
  });

  it("takes DOCKER_HOST over DOCKER_CONTEXT, as the docker CLI does", () => {
    const endpoint = resolveDockerEndpoint({
      HOME: home,
      DOCKER_HOST: "tcp://127.0.0.1:2375",
      DOCKER_CONTEXT: "skip",
    });
    expect(endpoint).toMatchObject({
      host: "tcp://127.0.0.1:2375",
      source: "DOCKER_HOST",
      tls: undefined,
      remote: true,
    });
  });

  it("takes DOCKER_CONTEXT over the current context, and keeps SkipTLSVerify", () => {
    useDockerContext(config, "build-host");
    const endpoint = resolveDockerEndpoint({ HOME: home, DOCKER_CONTEXT: "skip" });
    expect(endpoint).toMatchObject({
      host: "tcp://192.0.2.11:2376",
      source: "context 'skip' (DOCKER_CONTEXT)",
    });
    expect(endpoint.tls).toEqual({ ca: undefined, cert: undefined, key: undefined, verify: false });
  });

  it("falls back to the current context of the docker config (DOCKER_CONFIG moves it)", () => {
    useDockerContext(config, "local-alt");
    expect(resolveDockerEndpoint({ HOME: "/nonexistent", DOCKER_CONFIG: config })).toMatchObject({
      host: "unix:///run/other.sock",
      remote: false,
    });
    useDockerContext(config, "default");
    expect(resolveDockerEndpoint({ HOME: home }).host).toBe("unix:///var/run/docker.sock");
  });

  it("reads DOCKER_TLS_VERIFY and DOCKER_CERT_PATH for a tcp:// DOCKER_HOST", () => {
    const endpoint = resolveDockerEndpoint({
      HOME: home,
      DOCKER_HOST: "tcp://127.0.0.1:2376",
      DOCKER_TLS_VERIFY: "1",
      DOCKER_CERT_PATH: certs,
    });
    expect(endpoint.tls?.verify).toBe(true);
    expect(endpoint.tls?.key?.toString()).toBe("key.pem bytes");
  });

  it("names a missing context in one line", () => {
    expect(() => resolveDockerEndpoint({ HOME: home }, "nope")).toThrow(ConfigError);
    expect(() => resolveDockerEndpoint({ HOME: home }, "nope")).toThrow(
      /^context 'nope' \(--context\): no such Docker context/,
    );
  });
});

describe("isolationForEngine", () => {
  const remote = { host: "tcp://192.0.2.10:2376", source: "DOCKER_HOST", remote: true };
  const local = { host: "unix:///var/run/docker.sock", source: "the default socket", remote: false };

  it("keeps the requested isolation on a local engine", () => {
    expect(isolationForEngine({ isolation: "bind", isolationExplicit: true }, local)).toBe("bind");
    expect(isolationForEngine({}, local)).toBe("bind");
  });

  it("switches a remote engine to copy isolation and says so once", () => {
    const lines: string[] = [];
    expect(isolationForEngine({ isolation: "bind", onProgress: (l) => lines.push(l) }, remote)).toBe("copy");
    expect(lines).toEqual([
      "the engine at tcp://192.0.2.10:2376 (DOCKER_HOST) is remote: the workspace is copied in (copy isolation) instead of mounted",
    ]);
    expect(isolationForEngine({ isolation: "copy", onProgress: (l) => lines.push(l) }, remote)).toBe("copy");
    expect(lines).toHaveLength(1);
  });

  it("refuses an explicit --isolation bind and allowlist mode on a remote engine", () => {
    expect(() => isolationForEngine({ isolation: "bind", isolationExplicit: true }, remote)).toThrow(
      /^--isolation bind needs a local engine/,
    );
    expect(() => isolationForEngine({ egress: { allowHosts: ["example.com"] } }, remote)).toThrow(
      /^--allow-host\/--allow need a local engine/,
    );
  });
});
