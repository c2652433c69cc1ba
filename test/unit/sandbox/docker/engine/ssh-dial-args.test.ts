import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { resolveDockerEndpoint } from "../../../../../src/sandbox/docker/engine/docker-endpoint.js";
import { isolationForEngine } from "../../../../../src/sandbox/docker/engine/remote-engine.js";
import { sshDialArgs } from "../../../../../src/sandbox/docker/engine/ssh-dial-args.js";
import { writeDockerContext } from "../../../../support/docker-context-store.js";

const BOUNDS = [
  "-T",
  "-o",
  "BatchMode=yes",
  "-o",
  "ConnectTimeout=10",
  "-o",
  "ServerAliveInterval=5",
  "-o",
  "ServerAliveCountMax=3",
];

describe("sshDialArgs (the docker CLI's connhelper command line)", () => {
  it("passes user and port as options and the host after --", () => {
    expect(sshDialArgs("ssh://me@build.example:2222")).toEqual([
      ...BOUNDS,
      "-l",
      "me",
      "-p",
      "2222",
      "--",
      "build.example",
      "docker",
      "system",
      "dial-stdio",
    ]);
  });

  it("leaves user and port to the ssh config when the URL has none", () => {
    expect(sshDialArgs("ssh://build-host")).toEqual([
      ...BOUNDS,
      "--",
      "build-host",
      "docker",
      "system",
      "dial-stdio",
    ]);
  });

  it("unwraps an IPv6 literal and decodes the user", () => {
    const args = sshDialArgs("ssh://a%40b@[::1]:22");
    expect(args.slice(BOUNDS.length)).toEqual([
      "-l",
      "a@b",
      "-p",
      "22",
      "--",
      "::1",
      "docker",
      "system",
      "dial-stdio",
    ]);
  });

  it("refuses a path or a password, which the docker CLI refuses too", () => {
    expect(() => sshDialArgs("ssh://me@host/var/run/docker.sock")).toThrow(/takes no path/);
    expect(() => sshDialArgs("ssh://me:secret@host")).toThrow(/takes no password/);
  });

  it("a host spelled like an option stays a host (after --)", () => {
    const args = sshDialArgs("ssh://-oProxyCommand=x");
    expect(args.slice(args.indexOf("--"))).toEqual([
      "--",
      "-oProxyCommand=x",
      "docker",
      "system",
      "dial-stdio",
    ]);
  });
});

describe("an ssh:// endpoint", () => {
  it("from DOCKER_HOST is remote, without TLS, and gets copy isolation", () => {
    const endpoint = resolveDockerEndpoint({ DOCKER_HOST: "ssh://me@build-host" });
    expect(endpoint).toEqual({
      host: "ssh://me@build-host",
      source: "DOCKER_HOST",
      tls: undefined,
      remote: true,
    });
    const said: string[] = [];
    expect(isolationForEngine({ onProgress: (line) => said.push(line) }, endpoint)).toBe("copy");
    expect(said).toEqual([
      "the engine at ssh://me@build-host (DOCKER_HOST) is remote: the workspace is copied in (copy isolation) instead of mounted",
    ]);
  });

  it("from a Docker context is remote too", () => {
    const home = mkdtempSync(join(tmpdir(), "harness-ssh-endpoint-"));
    try {
      writeDockerContext(join(home, ".docker"), { name: "over-ssh", host: "ssh://me@build-host:2222" });
      expect(resolveDockerEndpoint({ HOME: home, DOCKER_CONTEXT: "over-ssh" })).toEqual({
        host: "ssh://me@build-host:2222",
        source: "context 'over-ssh' (DOCKER_CONTEXT)",
        tls: undefined,
        remote: true,
      });
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });
});
