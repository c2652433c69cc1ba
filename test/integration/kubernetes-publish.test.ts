/**
 * `--publish` on `--engine kubernetes`, on the cluster in HARNESS_TEST_KUBECONFIG: a server in the
 * pod reached from the host's 127.0.0.1, each connection one exec of the forwarder as the workspace
 * owner, the pod keeping only `lo` and no port of its own. Checked from the host (the bytes a host
 * client gets, the records, what listens after stop) and from the API server (the pod's spec).
 */
import { createHash } from "node:crypto";
import { realpathSync, writeFileSync } from "node:fs";
import { type AddressInfo, connect, createServer } from "node:net";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import { connectCluster } from "../../src/sandbox/kubernetes/api/kube-client.js";
import {
  KubernetesSandbox,
  type KubernetesSandboxOptions,
} from "../../src/sandbox/kubernetes/kubernetes-sandbox.js";
import { listHarnessPods } from "../../src/sandbox/kubernetes/pod/pod-registry.js";
import type { PublishRecord } from "../../src/sandbox/sandbox.js";
import { skipKubernetes, TEST_NAMESPACE, testKubeconfig } from "../support/kubernetes-available.js";
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

const open = (workspace: string, extra: Partial<KubernetesSandboxOptions> = {}) =>
  KubernetesSandbox.open({ workspace, kubeconfig: testKubeconfig, namespace: TEST_NAMESPACE, ...extra });
const cluster = () => connectCluster({ kubeconfig: testKubeconfig, namespace: TEST_NAMESPACE });

/**
 * Reads its client to the end, then answers with everything it read, reversed: the answer can only
 * come after the client's half-close has reached the server, all of it flowing back after that.
 */
const AFTER_EOF_SERVER = (port: number) =>
  `python3 -c 'import socket
s = socket.create_server(("127.0.0.1", ${port}))
while True:
    c, _ = s.accept()
    got = bytearray()
    while True:
        d = c.recv(65536)
        if not d: break
        got += d
    c.sendall(bytes(reversed(got)))
    c.close()'`;

/** The forwarders running in the pod now, as "ruid euid" rows (seen by a command, as the workspace owner). */
async function forwarders(sandbox: KubernetesSandbox): Promise<string[] | undefined> {
  // The bracket keeps this command's own line from matching; port-forward.py's docstring is in its argv.
  const ps = await sandbox.exec(
    "ps -ww -eo ruid=,euid=,args= | grep '[p]ublished port' | awk '{print $1, $2}'",
  );
  const rows = ps.stdout.split("\n").filter((row) => row.trim() !== "");
  return rows.length > 0 ? rows : undefined;
}

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

describe.skipIf(skipKubernetes)("published ports on Kubernetes", { timeout: 180_000 }, () => {
  const ws = makeWorkspace();
  const records: PublishRecord[] = [];
  const content = Buffer.from(`hello from the pod ${"x".repeat(5000)}\n`);
  let sandbox: KubernetesSandbox;
  let httpHost: number;
  let echoHost: number;
  let afterEofHost: number;
  let idleHost: number;

  beforeAll(async () => {
    // The workspace is copied into the pod at open: the file is there before.
    writeFileSync(join(ws.path, "hello.txt"), content);
    [httpHost, echoHost, afterEofHost, idleHost] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    sandbox = await open(ws.path, {
      publish: [
        { port: 8000, hostPort: httpHost },
        { port: 9000, hostPort: echoHost },
        { port: 9100, hostPort: afterEofHost },
        { port: 9500, hostPort: idleHost },
      ],
    });
    sandbox.published?.subscribe((record) => records.push(record));
    await startInSandbox(sandbox, "python3 -m http.server 8000 --bind 127.0.0.1", 8000);
    await startInSandbox(sandbox, ECHO_SERVER(9000), 9000);
    await startInSandbox(sandbox, AFTER_EOF_SERVER(9100), 9100);
  }, 180_000);

  afterAll(async () => {
    await sandbox?.stop();
    ws[Symbol.dispose]();
  });

  it("lists the published ports", () => {
    expect(sandbox.published?.ports).toEqual([
      { port: 8000, hostPort: httpHost },
      { port: 9000, hostPort: echoHost },
      { port: 9100, hostPort: afterEofHost },
      { port: 9500, hostPort: idleHost },
    ]);
  });

  it("serves a file from a Python http.server in the pod to a host HTTP client, and records it", async () => {
    const before = records.length;
    const { status, body } = await fetchBytes(`http://127.0.0.1:${httpHost}/hello.txt`);
    expect(status).toBe(200);
    expect(body.equals(content)).toBe(true);
    // The server saw the request come from the pod's own loopback.
    const log = await sandbox.exec("cat /tmp/server-8000.log");
    expect(log.stdout).toMatch(/^127\.0\.0\.1 - - .*"GET \/hello\.txt HTTP\/1\.1" 200/m);
    const record = await until(async () => records.slice(before).find((r) => r.port === 8000), "the record");
    expect(record).toMatchObject({
      port: 8000,
      hostPort: httpHost,
      client: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
    });
    expect(record.bytesDown).toBeGreaterThan(content.length);
    expect(record.bytesUp).toBeGreaterThan(0);
    expect(record.error).toBeUndefined();
  });

  it("carries megabytes both ways at once, and the client's half-close", async () => {
    const data = patternBytes();
    const back = await exchange(echoHost, data);
    expect(back.length).toBe(data.length);
    expect(sha256(back)).toBe(sha256(data));
  });

  it("passes the client's half-close on: megabytes come back after it", async () => {
    const data = patternBytes();
    const before = records.length;
    const back = await exchange(afterEofHost, data);
    expect(back.length).toBe(data.length);
    expect(sha256(back)).toBe(sha256(Buffer.from(data).reverse()));
    const record = await until(async () => records.slice(before).find((r) => r.port === 9100), "the record");
    expect(record).toMatchObject({ bytesUp: data.length, bytesDown: data.length });
    expect(record.error).toBeUndefined();
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
    expect(Date.parse(record.time)).not.toBeNaN();
  });

  it("closes the connection, and records why, when nothing listens on the port inside", async () => {
    const before = records.length;
    expect((await exchange(idleHost, Buffer.from("hello"))).length).toBe(0);
    const record = await until(async () => records.slice(before).find((r) => r.port === 9500), "the record");
    expect(record.error).toMatch(/127\.0\.0\.1:9500: Connection refused/);
  });

  it("runs each connection's forwarder as the workspace owner, not root", async () => {
    const socket = connect({ host: "127.0.0.1", port: echoHost });
    socket.on("error", () => {});
    try {
      const rows = await until(() => forwarders(sandbox), "the forwarder in the pod");
      for (const row of rows) expect(row).toBe(`${TEST_UID} ${TEST_UID}`);
    } finally {
      socket.destroy();
    }
  });

  it("leaves the pod without a network: only lo, no container port, not the host's network", async () => {
    expect((await sandbox.exec("ls /sys/class/net")).stdout).toBe("lo\n");
    const pod = await cluster().core.readNamespacedPod({ name: sandbox.podName, namespace: TEST_NAMESPACE });
    expect(pod.spec?.hostNetwork ?? false).toBe(false);
    for (const container of pod.spec?.containers ?? []) expect(container.ports ?? []).toEqual([]);
  });

  it("listens on the host's loopback only", async () => {
    const external = Object.values(networkInterfaces())
      .flat()
      .find((address) => address !== undefined && !address.internal && address.family === "IPv4");
    expect(await accepts(httpHost)).toBe(true);
    if (external !== undefined) expect(await accepts(httpHost, external.address)).toBe(false);
    expect(await accepts(httpHost, "::1")).toBe(false);
  });
});

describe.skipIf(skipKubernetes)(
  "published ports on Kubernetes when the sandbox stops, or cannot listen",
  { timeout: 180_000 },
  () => {
    it("stops listening, and cuts a connection still open, when the sandbox stops", async () => {
      using ws = makeWorkspace();
      const hostPort = await freePort();
      const sandbox = await open(ws.path, { publish: [{ port: 9000, hostPort }] });
      const records: PublishRecord[] = [];
      sandbox.published?.subscribe((record) => records.push(record));
      try {
        await startInSandbox(sandbox, ECHO_SERVER(9000), 9000);
        const open = connect({ host: "127.0.0.1", port: hostPort });
        const closed = new Promise((resolve) => open.on("close", resolve));
        open.on("error", () => {});
        await until(() => forwarders(sandbox), "the forwarder");
        await sandbox.stop();
        await closed;
        expect(await accepts(hostPort)).toBe(false);
        // Its record was out before stop returned.
        expect(records.map((r) => r.port)).toEqual([9000]);
      } finally {
        await sandbox.stop();
      }
    });

    it("refuses, in one line naming the port, a host port already in use, and leaves no pod", async () => {
      using ws = makeWorkspace();
      const busy = createServer();
      await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
      const { port } = busy.address() as AddressInfo;
      try {
        const error = await open(ws.path, { publish: [{ port: 8000, hostPort: port }] }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(ConfigError);
        expect((error as Error).message).not.toContain("\n");
        expect((error as Error).message).toContain(`127.0.0.1:${port} is in use`);
        expect(await listHarnessPods(cluster(), realpathSync(ws.path))).toEqual([]);
      } finally {
        await new Promise((resolve) => busy.close(resolve));
      }
    });
  },
);
