/**
 * `--publish`: a server inside the sandbox reached from the host's 127.0.0.1, on real Docker, with
 * the container keeping `NetworkMode: none`. Everything is checked from the host: the bytes a host
 * client gets, the container's interfaces and config, who the forwarder runs as (`docker top`), and
 * what is left listening once the sandbox stops.
 */
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { type AddressInfo, connect, createServer } from "node:net";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import type { PublishRecord } from "../../src/sandbox/sandbox.js";
import { skipDocker } from "../support/docker-available.js";
import {
  accepts,
  ECHO_SERVER,
  exchange,
  fetchBytes,
  freePort,
  patternBytes,
  startInSandbox,
  until,
} from "../support/publish-client.js";
import { makeWorkspace, TEST_UID } from "../support/workspace.js";

describe.skipIf(skipDocker)("published ports", { timeout: 180_000 }, () => {
  const ws = makeWorkspace();
  const records: PublishRecord[] = [];
  let sandbox: DockerSandbox;
  let httpHost: number;
  let echoHost: number;
  let idleHost: number;

  beforeAll(async () => {
    [httpHost, echoHost, idleHost] = [await freePort(), await freePort(), await freePort()];
    sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      publish: [
        { port: 8000, hostPort: httpHost },
        { port: 9000, hostPort: echoHost },
        { port: 9500, hostPort: idleHost },
      ],
    });
    sandbox.published?.subscribe((record) => records.push(record));
    await startInSandbox(sandbox, "python3 -m http.server 8000 --bind 127.0.0.1", 8000);
    await startInSandbox(sandbox, ECHO_SERVER(9000), 9000);
  }, 180_000);

  afterAll(async () => {
    await sandbox?.stop();
    ws[Symbol.dispose]();
  });

  it("serves a file from a Python http.server in the sandbox to a host HTTP client", async () => {
    const content = Buffer.from(`hello from the sandbox ${"x".repeat(5000)}\n`);
    writeFileSync(join(ws.path, "hello.txt"), content);
    const { status, body } = await fetchBytes(`http://127.0.0.1:${httpHost}/hello.txt`);
    expect(status).toBe(200);
    expect(body.equals(content)).toBe(true);
    // The server saw the request come from the container's own loopback.
    const log = await sandbox.exec("cat /tmp/server-8000.log");
    expect(log.stdout).toMatch(/^127\.0\.0\.1 - - .*"GET \/hello\.txt HTTP\/1\.1" 200/m);
  });

  it("carries megabytes both ways, and the client's half-close", async () => {
    const data = patternBytes();
    const back = await exchange(echoHost, data);
    expect(back.length).toBe(data.length);
    let at = 0;
    while (at < data.length && back[at] === data[at]) at++;
    expect(at).toBe(data.length);
    expect(createHash("sha256").update(back).digest("hex")).toBe(
      createHash("sha256").update(data).digest("hex"),
    );
  });

  it("records each connection when it ends", async () => {
    const before = records.length;
    await exchange(echoHost, Buffer.from("ping"));
    const record = await until(async () => records.slice(before).find((r) => r.bytesUp === 4), "the record");
    expect(record).toMatchObject({
      port: 9000,
      hostPort: echoHost,
      client: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
      bytesUp: 4,
      bytesDown: 4,
    });
    expect(record.error).toBeUndefined();
  });

  it("closes the connection, and records why, when nothing listens on the port inside", async () => {
    const before = records.length;
    expect((await exchange(idleHost, Buffer.from("hello"))).length).toBe(0);
    const record = await until(async () => records.slice(before).find((r) => r.port === 9500), "the record");
    expect(record.error).toMatch(/127\.0\.0\.1:9500: Connection refused/);
  });

  it("leaves the container without a network: only lo, NetworkMode none, no port mapping", async () => {
    expect((await sandbox.exec("ls /sys/class/net")).stdout).toBe("lo\n");
    const info = await new Docker().getContainer(sandbox.containerId).inspect();
    expect(info.HostConfig.NetworkMode).toBe("none");
    expect(info.HostConfig.PortBindings ?? {}).toEqual({});
    expect(info.NetworkSettings.Ports ?? {}).toEqual({});
  });

  it("listens on the host's loopback only", async () => {
    const external = Object.values(networkInterfaces())
      .flat()
      .find((address) => address !== undefined && !address.internal && address.family === "IPv4");
    expect(await accepts(httpHost)).toBe(true);
    if (external !== undefined) expect(await accepts(httpHost, external.address)).toBe(false);
    expect(await accepts(httpHost, "::1")).toBe(false);
  });

  it("runs the forwarder as the sandbox user, not root", async () => {
    const socket = connect({ host: "127.0.0.1", port: echoHost });
    try {
      const container = new Docker().getContainer(sandbox.containerId);
      const rows = await until(async () => {
        const top = (await container.top({ ps_args: "-eo pid,ruid,euid,args" })) as {
          Processes?: string[][];
        };
        const found = (top.Processes ?? []).filter((row) => row.join(" ").includes("published port"));
        return found.length > 0 ? found : undefined;
      }, "the forwarder in docker top");
      for (const row of rows) expect(row.slice(1, 3)).toEqual([String(TEST_UID), String(TEST_UID)]);
    } finally {
      socket.destroy();
    }
  });
});

describe.skipIf(skipDocker)(
  "published ports when the sandbox stops, or cannot listen",
  { timeout: 180_000 },
  () => {
    it("stops listening, and leaves no forwarder, when the sandbox stops", async () => {
      using ws = makeWorkspace();
      const hostPort = await freePort();
      const sandbox = await DockerSandbox.open({ workspace: ws.path, publish: [{ port: 9000, hostPort }] });
      const container = new Docker().getContainer(sandbox.containerId);
      try {
        await startInSandbox(sandbox, ECHO_SERVER(9000), 9000);
        // A connection still open when the sandbox stops.
        const open = connect({ host: "127.0.0.1", port: hostPort });
        const closed = new Promise((resolve) => open.on("close", resolve));
        open.on("error", () => {});
        await until(async () => {
          const top = (await container.top({ ps_args: "-eo pid,args" })) as { Processes?: string[][] };
          return (top.Processes ?? []).some((row) => row.join(" ").includes("published port"))
            ? true
            : undefined;
        }, "the forwarder");
        await sandbox.stop();
        await closed;
        expect(await accepts(hostPort)).toBe(false);
        const top = (await container.top({ ps_args: "-eo pid,args" })) as { Processes?: string[][] };
        expect((top.Processes ?? []).filter((row) => row.join(" ").includes("published port"))).toEqual([]);
      } finally {
        await sandbox.stop();
        await container.remove({ force: true }).catch(() => {});
      }
    });

    it("refuses, in one line naming the port, a host port already in use", async () => {
      using ws = makeWorkspace();
      const busy = createServer();
      await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
      const { port } = busy.address() as AddressInfo;
      try {
        const opening = DockerSandbox.open({
          workspace: ws.path,
          removeOnStop: true,
          publish: [{ port: 8000, hostPort: port }],
        });
        await expect(opening).rejects.toThrow(ConfigError);
        await expect(opening).rejects.toThrow(`127.0.0.1:${port} is in use`);
      } finally {
        await new Promise((resolve) => busy.close(resolve));
      }
    });
  },
);
