/**
 * The gateway end to end on loopback: clients talk to its Unix socket as the sandbox's relay would;
 * origins on 127.0.0.1 say from their side what reached them.
 */
import { request } from "node:http";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../../src/errors.js";
import { EgressGateway } from "../../../../src/sandbox/egress/egress-gateway.js";
import {
  closedPort,
  connectThrough,
  echoOrigin,
  eventually,
  httpOrigin,
  rawClient,
  startGateway,
} from "./gateway-fixture.js";

describe("EgressGateway: allowed traffic", () => {
  it("tunnels a CONNECT to an allowed name, counts its bytes and records it with the call id", async () => {
    await using origin = await echoOrigin();
    await using gw = await startGateway({ allowHosts: [`example.com:${origin.port}`] });
    const client = await connectThrough(gw.gateway.socketPath, `example.com:${origin.port}`);
    expect(client.received()).toBe("HTTP/1.1 200 Connection Established\r\n\r\n");
    client.socket.write("ping through the tunnel");
    await client.waitFor(/ping through the tunnel$/);
    client.socket.end();
    await client.closed;
    await eventually(() => gw.records.length === 1);
    expect(gw.records[0]).toMatchObject({
      callId: "toolu_1",
      host: "example.com",
      port: origin.port,
      method: "CONNECT",
      allowed: true,
      address: "127.0.0.1",
      status: 200,
      bytesUp: 23,
      bytesDown: 23,
    });
    expect(gw.records[0]?.reason).toBeUndefined();
    expect(gw.gateway.totals()).toEqual({
      allowed: 1,
      denied: 0,
      bytesUp: 23,
      bytesDown: 23,
      hosts: ["example.com"],
    });
    expect(gw.gateway.allowHosts).toEqual([`example.com:${origin.port}`]);
  });

  it("sends bytes that follow the CONNECT head at once up the tunnel", async () => {
    await using origin = await echoOrigin();
    await using gw = await startGateway({ allowHosts: [`*.example.org:${origin.port}`] });
    const client = await rawClient(gw.gateway.socketPath);
    client.socket.write(`CONNECT a.b.example.org:${origin.port} HTTP/1.1\r\n\r\nearly bytes`);
    await client.waitFor(/\r\n\r\nearly bytes$/);
    client.socket.destroy();
    await eventually(() => gw.records.length === 1);
    expect(gw.records[0]).toMatchObject({ host: "a.b.example.org", allowed: true, bytesUp: 11 });
  });

  it("keeps bytes a client sends while the gateway is still resolving", async () => {
    await using origin = await echoOrigin();
    let release = () => {};
    let asked = false;
    const slowLookup = async () => {
      asked = true;
      await new Promise<void>((resolve) => {
        release = resolve;
      });
      return [{ address: "127.0.0.1", family: 4 }];
    };
    await using gw = await startGateway({ allowHosts: [`example.com:${origin.port}`], lookup: slowLookup });
    const client = await rawClient(gw.gateway.socketPath);
    client.socket.write(`CONNECT example.com:${origin.port} HTTP/1.1\r\n\r\n`);
    await eventually(() => asked);
    client.socket.write("sent before the answer");
    await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    await client.waitFor(/\r\n\r\nsent before the answer$/);
    client.socket.destroy();
    expect(origin.accepted()).toBe(1);
  });

  it("forwards a plain-HTTP absolute URL with the URL's Host and without hop-by-hop headers", async () => {
    await using origin = await httpOrigin();
    await using gw = await startGateway({ allowHosts: [`example.com:${origin.port}`] });
    const response = await new Promise<{ status: number; headers: Record<string, unknown>; body: string }>(
      (resolve, reject) => {
        const req = request({
          socketPath: gw.gateway.socketPath,
          method: "POST",
          path: `http://example.com:${origin.port}/path?q=1`,
          headers: {
            Host: "evil.test",
            "Proxy-Authorization": "Basic c2VjcmV0",
            "Proxy-Connection": "keep-alive",
            Connection: "X-Private-Hop",
            "X-Private-Hop": "do not forward",
            "X-End-To-End": "kept",
            "Content-Length": "4",
          },
        });
        req.on("response", (res) => {
          let body = "";
          res.on("data", (chunk: Buffer) => {
            body += chunk.toString();
          });
          res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        });
        req.on("error", reject);
        req.end("data");
      },
    );
    expect(response.status).toBe(200);
    expect(response.body).toBe("hello from origin");
    expect(response.headers["x-origin"]).toBe("yes");
    expect(response.headers["x-hop"]).toBeUndefined();
    const seen = origin.seen[0];
    expect(seen?.url).toBe("/path?q=1");
    expect(seen?.body).toBe("data");
    expect(seen?.headers.host).toBe(`example.com:${origin.port}`);
    expect(seen?.headers["x-end-to-end"]).toBe("kept");
    expect(seen?.headers["proxy-authorization"]).toBeUndefined();
    expect(seen?.headers["proxy-connection"]).toBeUndefined();
    expect(seen?.headers["x-private-hop"]).toBeUndefined();
    await eventually(() => gw.records.length === 1);
    expect(gw.records[0]).toMatchObject({
      method: "POST",
      host: "example.com",
      allowed: true,
      status: 200,
    });
    // Bytes on the wire to and from the origin: the 4- and 17-byte bodies plus the request and response heads.
    expect(gw.records[0]?.bytesUp).toBeGreaterThan(4 + 40);
    expect(gw.records[0]?.bytesDown).toBeGreaterThan(17 + 40);
  });

  it("answers 502 with a reason when the name does not resolve or the origin does not answer", async () => {
    const port = await closedPort();
    await using gw = await startGateway({ allowHosts: [`nowhere.test:${port}`, `example.com:${port}`] });
    const unresolved = await connectThrough(gw.gateway.socketPath, `nowhere.test:${port}`);
    expect(unresolved.status).toBe(502);
    await unresolved.waitFor(/name does not resolve/);
    const refused = await connectThrough(gw.gateway.socketPath, `example.com:${port}`);
    expect(refused.status).toBe(502);
    await refused.waitFor(/origin unreachable: ECONNREFUSED/);
    await eventually(() => gw.records.length === 2);
    expect(gw.records).toMatchObject([
      { host: "nowhere.test", allowed: true, status: 502, reason: "name does not resolve" },
      { host: "example.com", allowed: true, status: 502, reason: "origin unreachable: ECONNREFUSED" },
    ]);
  });
});

describe("EgressGateway: refusals", () => {
  it("refuses a name not on the list with a 403 naming the flag, before any DNS", async () => {
    await using gw = await startGateway({ allowHosts: ["example.com"] });
    const client = await connectThrough(gw.gateway.socketPath, "example.org:443");
    expect(client.status).toBe(403);
    const text = await client.waitFor(/\n$/);
    expect(text).toContain("example.org:443: not on the allowlist (--allow-host example.org would allow it)");
    await client.closed;
    expect(gw.lookups).toEqual([]);
    const denial = {
      host: "example.org",
      port: 443,
      reason: "not on the allowlist (--allow-host example.org would allow it)",
    };
    expect(gw.call.denied).toEqual([denial]);
    expect(gw.records).toMatchObject([
      { ...denial, callId: "toolu_1", method: "CONNECT", allowed: false, status: 403 },
    ]);
  });

  it("refuses IP literals that are not listed and ports that are not the entry's, without connecting", async () => {
    await using origin = await echoOrigin();
    await using gw = await startGateway({ allowHosts: [`example.com:${origin.port}`] });
    for (const authority of [
      `127.0.0.1:${origin.port}`,
      `0x7f.1:${origin.port}`,
      `[::ffff:127.0.0.1]:${origin.port}`,
    ]) {
      const client = await connectThrough(gw.gateway.socketPath, authority);
      expect(client.status).toBe(403);
      await client.waitFor(
        /IP addresses are refused unless listed exactly \(--allow-host 127\.0\.0\.1:\d+\)/,
      );
    }
    const wrongPort = await connectThrough(gw.gateway.socketPath, "example.com:443");
    expect(wrongPort.status).toBe(403);
    await wrongPort.waitFor(/port 443 is not allowed for example\.com/);
    expect(origin.accepted()).toBe(0);
    expect(gw.lookups).toEqual([]);
    expect(gw.call.denied).toHaveLength(4);
  });

  it("refuses a name that resolves to loopback without allowPrivate, and the origin sees nothing", async () => {
    await using origin = await echoOrigin();
    await using gw = await startGateway({ allowHosts: [`example.com:${origin.port}`], allowPrivate: false });
    const client = await connectThrough(gw.gateway.socketPath, `example.com:${origin.port}`);
    expect(client.status).toBe(403);
    await client.waitFor(
      /example\.com resolves to 127\.0\.0\.1, a loopback address \(--allow-private would allow it\)/,
    );
    await client.closed;
    expect(gw.lookups).toEqual(["example.com"]);
    expect(origin.accepted()).toBe(0);
    expect(gw.records).toMatchObject([{ host: "example.com", allowed: false, status: 403 }]);
    expect(gw.records[0]?.address).toBeUndefined();
    expect(gw.call.denied).toHaveLength(1);
  });

  it("refuses a name that resolves to a metadata address even with allowPrivate", async () => {
    await using gw = await startGateway({ allowHosts: ["metadata.test:80"], allowPrivate: true });
    const client = await connectThrough(gw.gateway.socketPath, "metadata.test:80");
    expect(client.status).toBe(403);
    await client.waitFor(
      /169\.254\.169\.254, a cloud metadata address \(always refused, even with --allow-private\)/,
    );
    expect(gw.gateway.totals()).toMatchObject({ allowed: 0, denied: 1, hosts: [] });
  });

  it("checks each request of a keep-alive connection on its own", async () => {
    await using origin = await httpOrigin();
    await using gw = await startGateway({ allowHosts: [`example.com:${origin.port}`] });
    const client = await rawClient(gw.gateway.socketPath);
    client.socket.write(`GET http://example.com:${origin.port}/first HTTP/1.1\r\nHost: example.com\r\n\r\n`);
    await client.waitFor(/hello from origin\r\n0\r\n\r\n$/);
    client.socket.write(`GET http://example.org:${origin.port}/second HTTP/1.1\r\nHost: example.com\r\n\r\n`);
    const text = await client.waitFor(/403 Forbidden[\s\S]*not on the allowlist.*\n$/);
    expect(text).toContain(
      `example.org:${origin.port}: not on the allowlist (--allow-host example.org:${origin.port} would allow it)`,
    );
    expect(origin.seen.map((r) => r.url)).toEqual(["/first"]);
    client.socket.destroy();
  });

  it("answers 400 to a request that is not an absolute URL or a CONNECT authority, and records it", async () => {
    await using gw = await startGateway({ allowHosts: ["example.com"] });
    const originForm = await rawClient(gw.gateway.socketPath);
    originForm.socket.write("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n");
    const text = await originForm.waitFor(/\n$/);
    expect(text).toMatch(/^HTTP\/1\.1 400 /);
    expect(text).toContain("send an absolute http:// URL");
    const badConnect = await connectThrough(gw.gateway.socketPath, "example.com");
    expect(badConnect.status).toBe(400);
    const garbage = await rawClient(gw.gateway.socketPath);
    garbage.socket.write("\x16\x03\x01\x02\x00 not http at all\r\n\r\n");
    await garbage.closed;
    await eventually(() => gw.records.length === 3);
    expect(gw.records).toMatchObject([
      { host: "example.com", method: "GET", allowed: false, status: 400 },
      { host: "example.com", method: "CONNECT", allowed: false, status: 400 },
      { method: "?", allowed: false, status: 400 },
    ]);
    // A malformed request is recorded but is no allowlist denial to tell the model about.
    expect(gw.call.denied).toEqual([]);
  });
});

describe("EgressGateway.start", () => {
  it("refuses a bad allow entry with a ConfigError", async () => {
    await expect(
      EgressGateway.start({
        socketDir: "/nonexistent-never-created",
        allowHosts: ["https://example.com/"],
        allowPrivate: false,
        limitBytes: 1,
        maxConnections: 1,
        idleMs: 1,
        maxConnectionMs: 1,
      }),
    ).rejects.toThrow(ConfigError);
  });
});
