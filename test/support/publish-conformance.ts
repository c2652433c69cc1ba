/**
 * What `--publish` promises on every engine, checked from the host: a Python http.server in the
 * sandbox serves a host HTTP client; megabytes go both ways, and come back after the client's
 * half-close; each connection is recorded, also the one refused inside (reset on the host); the listener is on the
 * host's loopback only. Each engine's test file calls this once and adds what only it can check
 * (the container's or pod's network settings, who the forwarder runs as, stop, a busy port).
 */
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PublishRecord, Sandbox } from "../../src/sandbox/sandbox.js";
import {
  accepts,
  ECHO_SERVER,
  exchange,
  fetchBytes,
  freePort,
  patternBytes,
  startInSandbox,
  until,
} from "./publish-client.js";
import { makeWorkspace } from "./workspace.js";

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

const sha256 = (data: Buffer) => createHash("sha256").update(data).digest("hex");

/** The open sandbox and its host ports, for the engine's own tests inside the same describe. */
export interface PublishContext<S extends Sandbox> {
  sandbox(): S;
  /** The host port of the echo server (sandbox port 9000). */
  echoHost(): number;
}

export function publishConformance<S extends Sandbox>(options: {
  title: string;
  skip: boolean;
  /** Opens the sandbox of `workspace` with these ports published. */
  open: (workspace: string, publish: { port: number; hostPort: number }[]) => Promise<S>;
  /** The engine's own tests, run against the same sandbox. */
  more?: (context: PublishContext<S>) => void;
}): void {
  describe.skipIf(options.skip)(options.title, { timeout: 180_000 }, () => {
    const ws = makeWorkspace();
    const records: PublishRecord[] = [];
    const content = Buffer.from(`hello from the sandbox ${"x".repeat(5000)}\n`);
    let sandbox: S;
    let httpHost: number;
    let echoHost: number;
    let afterEofHost: number;
    let idleHost: number;

    beforeAll(async () => {
      // Written before open: a copy-mode sandbox (every pod) has it only if it is there then.
      writeFileSync(join(ws.path, "hello.txt"), content);
      [httpHost, echoHost, afterEofHost, idleHost] = [
        await freePort(),
        await freePort(),
        await freePort(),
        await freePort(),
      ];
      sandbox = await options.open(ws.path, [
        { port: 8000, hostPort: httpHost },
        { port: 9000, hostPort: echoHost },
        { port: 9100, hostPort: afterEofHost },
        { port: 9500, hostPort: idleHost },
      ]);
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

    it("serves a file from a Python http.server in the sandbox to a host HTTP client, and records it", async () => {
      const before = records.length;
      const { status, body } = await fetchBytes(`http://127.0.0.1:${httpHost}/hello.txt`);
      expect(status).toBe(200);
      expect(body.equals(content)).toBe(true);
      // The server saw the request come from the sandbox's own loopback.
      const log = await sandbox.exec("cat /tmp/server-8000.log");
      expect(log.stdout).toMatch(/^127\.0\.0\.1 - - .*"GET \/hello\.txt HTTP\/1\.1" 200/m);
      const record = await until(
        async () => records.slice(before).find((r) => r.port === 8000),
        "the record",
      );
      expect(record).toMatchObject({
        port: 8000,
        hostPort: httpHost,
        client: expect.stringMatching(/^127\.0\.0\.1:\d+$/),
      });
      expect(record.bytesDown).toBeGreaterThan(content.length);
      expect(record.bytesUp).toBeGreaterThan(0);
      expect(record.error).toBeUndefined();
      expect(Date.parse(record.time)).not.toBeNaN();
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
      const record = await until(
        async () => records.slice(before).find((r) => r.port === 9100),
        "the record",
      );
      expect(record).toMatchObject({ bytesUp: data.length, bytesDown: data.length });
      expect(record.error).toBeUndefined();
    });

    it("resets the connection, and records why, when nothing listens on the port inside", async () => {
      const before = records.length;
      // A reset, as a refused connection would be: not an empty answer a browser takes for a server's.
      await expect(exchange(idleHost, Buffer.from("hello"))).rejects.toMatchObject({ code: "ECONNRESET" });
      const record = await until(
        async () => records.slice(before).find((r) => r.port === 9500),
        "the record",
      );
      expect(record.error).toMatch(/127\.0\.0\.1:9500: Connection refused/);
    });

    it("listens on the host's loopback only", async () => {
      const external = Object.values(networkInterfaces())
        .flat()
        .find((address) => address !== undefined && !address.internal && address.family === "IPv4");
      expect(await accepts(httpHost)).toBe(true);
      if (external !== undefined) expect(await accepts(httpHost, external.address)).toBe(false);
      expect(await accepts(httpHost, "::1")).toBe(false);
    });

    options.more?.({ sandbox: () => sandbox, echoHost: () => echoHost });
  });
}
