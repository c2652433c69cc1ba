/**
 * Allowlist mode end to end on real Docker: a `--network none` container whose only way out is the
 * relay inside and the gateway on the host, reaching origin servers on the host's loopback (the
 * gateway is told allowPrivate, and resolves documentation names to loopback).
 */

import { existsSync, readdirSync } from "node:fs";
import Docker from "dockerode";
import { beforeAll, describe, expect, it } from "vitest";
import { ConfigError, SandboxError } from "../../src/errors.js";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import type { DockerSandboxOptions } from "../../src/sandbox/docker/docker-sandbox-options.js";
import { runSimpleExec } from "../../src/sandbox/docker/exec/exec-helper.js";
import { egressSocketDir } from "../../src/state/state-dir.js";
import { skipDocker } from "../support/docker-available.js";
import { makeWorkspace } from "../support/workspace.js";
import { removesContainerOf } from "../support/workspace-container.js";
import {
  collectRecords,
  eventually,
  imageWithoutPython,
  loopbackLookup,
  ORIGIN,
  type Origin,
  pythonGet,
  useOrigins,
} from "./egress-fixture.js";

/** Processes of the sandbox's container whose command line names the relay (`docker top`). */
async function relayProcesses(containerId: string): Promise<string[]> {
  const top = (await new Docker().getContainer(containerId).top({ ps_args: "-eo pid,args" })) as {
    Processes?: string[][];
  };
  return (top.Processes ?? [])
    .map((row) => row.join(" "))
    .filter((line) => line.includes("/run/harness-egress"));
}

/**
 * Waits until the engine has seen every relay exec of the container end. A kill's own exec can be
 * reported done before the relay's exit reaches the engine (both are the shim's events); until it
 * does, the engine still says the relay runs, and harness rightly uses it.
 */
async function relayExecsEnded(containerId: string): Promise<void> {
  const docker = new Docker();
  const until = Date.now() + 10_000;
  for (;;) {
    const ids = (await docker.getContainer(containerId).inspect()).ExecIDs ?? [];
    const running = await Promise.all(
      ids.map(async (id) => {
        const info = await docker
          .getExec(id)
          .inspect()
          .catch(() => undefined);
        return info?.Running === true && JSON.stringify(info.ProcessConfig).includes("/run/harness-egress");
      }),
    );
    if (!running.includes(true)) return;
    if (Date.now() > until) throw new Error("the engine still reports the relay running 10 s after its kill");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.skipIf(skipDocker)("allowlist mode through the sandbox", () => {
  const shared = useOrigins();
  let origin: Origin;
  let tlsOrigin: Origin;
  beforeAll(() => {
    ({ origin, tlsOrigin } = shared);
  });

  function options(workspace: string, more: Partial<DockerSandboxOptions> = {}): DockerSandboxOptions {
    return {
      workspace,
      removeOnStop: true,
      egress: { allowHosts: [`${ORIGIN}:${origin.port}`, `${ORIGIN}:${tlsOrigin.port}`], allowPrivate: true },
      egressLookup: loopbackLookup,
      ...more,
    };
  }

  it("gets a plain HTTP page through the relay and the gateway, recorded with the call's id", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open(options(ws.path));
    expect(sandbox.description.network).toBe("allowlist");
    const records = collectRecords(sandbox);
    const before = origin.paths.length;
    const result = await sandbox.exec(pythonGet(`http://${ORIGIN}:${origin.port}/plain`), {
      callId: "toolu_1",
    });
    expect(result.stdout).toBe("STATUS 200\norigin-ok /plain\n");
    expect(result.egressDenied).toEqual([]);
    expect(origin.paths.slice(before)).toEqual(["/plain"]);
    await eventually(() => records.length > 0);
    expect(records[0]).toMatchObject({
      callId: "toolu_1",
      host: ORIGIN,
      port: origin.port,
      method: "GET",
      allowed: true,
      address: "127.0.0.1",
      status: 200,
    });
    // Bytes on the wire to and from the origin: the request head up, the response head and page down.
    expect(records[0]?.bytesUp).toBeGreaterThan(0);
    expect(records[0]?.bytesDown).toBeGreaterThan(Buffer.byteLength("origin-ok /plain"));
  });

  it("tunnels HTTPS with CONNECT (no interception: the origin's own certificate arrives)", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open(options(ws.path));
    const records = collectRecords(sandbox);
    const url = `https://${ORIGIN}:${tlsOrigin.port}/secure`;
    const script = `${pythonGet(url)}
python3 -c "import ssl; print(ssl.get_server_certificate(('${ORIGIN}', ${tlsOrigin.port})))" >/dev/null 2>&1 && echo DIRECT || echo NO-DIRECT`;
    const result = await sandbox.exec(script, { callId: "toolu_tls" });
    // The direct attempt (no proxy: get_server_certificate ignores the variables) has no route.
    expect(result.stdout).toBe("STATUS 200\norigin-ok /secure\nNO-DIRECT\n");
    await eventually(() => records.some((r) => r.method === "CONNECT"));
    const tunnel = records.find((r) => r.method === "CONNECT");
    expect(tunnel).toMatchObject({ callId: "toolu_tls", host: ORIGIN, port: tlsOrigin.port, allowed: true });
    // A TLS handshake is more than a kilobyte down (the certificate) and some bytes up: the tunnel's, counted.
    expect(tunnel?.bytesDown).toBeGreaterThan(1000);
    expect(tunnel?.bytesUp).toBeGreaterThan(100);
  });

  it("sets the proxy variables on each command, not on the container", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open(options(ws.path));
    const result = await sandbox.exec(
      `echo "$HTTP_PROXY $https_proxy $NO_PROXY $npm_config_https_proxy"; tr '\\0' '\\n' < /proc/1/environ | grep -ci proxy || true`,
    );
    const [line, inContainer] = result.stdout.trim().split("\n");
    expect(line).toMatch(
      /^http:\/\/127\.0\.0\.1:([0-9]+) http:\/\/127\.0\.0\.1:\1 localhost,127\.0\.0\.1,::1 http:\/\/127\.0\.0\.1:\1$/,
    );
    expect(inContainer).toBe("0");
  });

  it("a command cannot end the relay; one that ended anyway is started again, said once", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open(options(ws.path));
    // The relay is the machinery's (root): `kill -9 -1` from a command does not reach it (issue 19).
    const killed = await sandbox.exec("kill -9 -1");
    expect(killed.notices).toEqual([]);
    const still = await sandbox.exec(pythonGet(`http://${ORIGIN}:${origin.port}/after-kill`));
    expect(still.notices).toEqual([]);
    expect(still.stdout).toBe("STATUS 200\norigin-ok /after-kill\n");
    // Ended from outside (as root, as the kernel's OOM killer might): the next command starts it again.
    const relayKill = `for d in /proc/[0-9]*; do [ "\${d#/proc/}" = $$ ] && continue; case "$(tr '\\0' ' ' < $d/cmdline 2>/dev/null)" in */run/harness-egress/*) kill -9 \${d#/proc/} ;; esac; done; true`;
    await runSimpleExec(new Docker().getContainer(sandbox.containerId), ["/bin/sh", "-c", relayKill], "0:0");
    await relayExecsEnded(sandbox.containerId);
    const again = await sandbox.exec(pythonGet(`http://${ORIGIN}:${origin.port}/after-restart`));
    expect(again.notices).toEqual([expect.stringContaining("network relay had stopped")]);
    expect(again.stdout).toBe("STATUS 200\norigin-ok /after-restart\n");
    const third = await sandbox.exec("true");
    expect(third.notices).toEqual([]);
  });

  it("starts the relay again after the container was stopped from outside and recovered", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open(options(ws.path));
    await new Docker().getContainer(sandbox.containerId).stop({ t: 0 });
    const result = await sandbox.exec(pythonGet(`http://${ORIGIN}:${origin.port}/after-restart`));
    expect(result.notices.join("\n")).toContain("the sandbox container was started");
    expect(result.stdout).toBe("STATUS 200\norigin-ok /after-restart\n");
  });

  it("gives two harness processes on one workspace their own relay and port in the shared container", async () => {
    using ws = makeWorkspace();
    await using _cleanup = removesContainerOf(ws.path);
    await using first = await DockerSandbox.open(options(ws.path, { removeOnStop: false }));
    await using second = await DockerSandbox.open(options(ws.path, { removeOnStop: false }));
    expect(second.containerId).toBe(first.containerId);
    const port = async (s: DockerSandbox) => (await s.exec('echo "$HTTP_PROXY"')).stdout.trim();
    expect(await port(first)).not.toBe(await port(second));
    expect(await relayProcesses(first.containerId)).toHaveLength(2);
    for (const [name, s] of [
      ["first", first],
      ["second", second],
    ] as const) {
      expect((await s.exec(pythonGet(`http://${ORIGIN}:${origin.port}/${name}`))).stdout).toBe(
        `STATUS 200\norigin-ok /${name}\n`,
      );
    }
  });

  it("leaves no relay process and no socket behind when it stops", async () => {
    using ws = makeWorkspace();
    await using _cleanup = removesContainerOf(ws.path);
    const sandbox = await DockerSandbox.open(options(ws.path, { removeOnStop: false }));
    const dir = egressSocketDir(sandbox.description.workspace, "bind");
    expect(readdirSync(dir).filter((name) => name.endsWith(".sock"))).toHaveLength(1);
    expect(await relayProcesses(sandbox.containerId)).toHaveLength(1);
    await sandbox.stop();
    expect(await relayProcesses(sandbox.containerId)).toEqual([]);
    expect(readdirSync(dir)).toEqual([]);
  });

  it("works in copy mode too", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open(options(ws.path, { isolation: "copy" }));
    const result = await sandbox.exec(pythonGet(`http://${ORIGIN}:${origin.port}/copy`));
    expect(result.stdout).toBe("STATUS 200\norigin-ok /copy\n");
  });

  it("refuses an image without python3 in one clear line, and leaves no gateway socket", async () => {
    using ws = makeWorkspace();
    const image = await imageWithoutPython();
    const error = await DockerSandbox.open(options(ws.path, { image })).then(
      async (sandbox) => {
        await sandbox.stop();
        return "opened";
      },
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(SandboxError);
    expect((error as Error).message).toMatch(/^allowlist mode needs python3 in the image/);
    const dir = egressSocketDir(ws.path, "bind");
    expect(existsSync(dir) ? readdirSync(dir) : []).toEqual([]);
  });

  it("refuses allowlist mode with a network before touching anything", async () => {
    using ws = makeWorkspace();
    await expect(DockerSandbox.open(options(ws.path, { network: "bridge" }))).rejects.toBeInstanceOf(
      ConfigError,
    );
  });
});
