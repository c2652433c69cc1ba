/**
 * `--publish` on real Docker: the shared set (test/support/publish-conformance.ts), then what only
 * Docker shows: the container keeps `NetworkMode: none` and no port mapping, the forwarder runs as
 * the sandbox user (`docker top`), nothing listens or forwards once the sandbox stops, a busy host
 * port is refused in one line.
 */
import { type AddressInfo, connect, createServer } from "node:net";
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import { skipDocker } from "../support/docker-available.js";
import { accepts, ECHO_SERVER, freePort, startInSandbox, until } from "../support/publish-client.js";
import { publishConformance } from "../support/publish-conformance.js";
import { makeWorkspace, TEST_UID } from "../support/workspace.js";

publishConformance({
  title: "published ports",
  skip: skipDocker,
  open: (workspace, publish) => DockerSandbox.open({ workspace, removeOnStop: true, publish }),
  more: ({ sandbox, echoHost }) => {
    it("leaves the container without a network: only lo, NetworkMode none, no port mapping", async () => {
      expect((await sandbox().exec("ls /sys/class/net")).stdout).toBe("lo\n");
      const info = await new Docker().getContainer(sandbox().containerId).inspect();
      expect(info.HostConfig.NetworkMode).toBe("none");
      expect(info.HostConfig.PortBindings ?? {}).toEqual({});
      expect(info.NetworkSettings.Ports ?? {}).toEqual({});
    });

    it("runs the forwarder as the sandbox user, not root", async () => {
      const socket = connect({ host: "127.0.0.1", port: echoHost() });
      socket.on("error", () => {});
      try {
        const container = new Docker().getContainer(sandbox().containerId);
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
  },
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
