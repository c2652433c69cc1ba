/**
 * A wildcard entry lets the task pick the name, and every name picked is looked up on the host: the
 * query reaches whoever serves the zone, so `<data>.example.org` would carry data out. The gateway
 * bounds the distinct names looked up per wildcard entry, records each one, and refuses the rest
 * before DNS.
 */
import { request as httpRequest } from "node:http";
import { describe, expect, it } from "vitest";
import { ConfigError } from "../../../../src/errors.js";
import { DEFAULT_WILDCARD_NAMES, EgressGateway } from "../../../../src/sandbox/egress/egress-gateway.js";
import { connectThrough, echoOrigin, eventually, startGateway } from "./gateway-fixture.js";

/** A resolver that answers 127.0.0.1 for any name and counts what it was asked. */
function countingLookup() {
  const asked: string[] = [];
  return {
    asked,
    lookup: async (name: string) => {
      asked.push(name);
      return [{ address: "127.0.0.1", family: 4 }];
    },
  };
}

async function tunnelStatus(
  socketPath: string,
  authority: string,
): Promise<{ status: number; text: string }> {
  const client = await connectThrough(socketPath, authority);
  const text = client.status === 200 ? client.received() : await client.waitFor(/\n$/);
  client.socket.destroy();
  await client.closed;
  return { status: client.status, text };
}

function plainStatus(socketPath: string, url: string): Promise<{ status: number | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ socketPath, method: "GET", path: url, agent: false }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

const bound = (entry: string, n: number) =>
  `${entry} already had ${n} distinct names looked up this run, the most one wildcard entry may (--egress-wildcard-names raises it)`;

describe("EgressGateway: distinct names under a wildcard entry", () => {
  it(`looks up at most ${DEFAULT_WILDCARD_NAMES} distinct names per wildcard entry by default, then refuses before DNS`, async () => {
    await using origin = await echoOrigin();
    const resolver = countingLookup();
    await using gw = await startGateway({
      allowHosts: [`*.example.org:${origin.port}`],
      lookup: resolver.lookup,
    });
    const statuses: number[] = [];
    for (let i = 0; i < 200; i += 1) {
      statuses.push(
        (await tunnelStatus(gw.gateway.socketPath, `data${i}.example.org:${origin.port}`)).status,
      );
    }
    expect(statuses.slice(0, DEFAULT_WILDCARD_NAMES).every((s) => s === 200)).toBe(true);
    expect(statuses.slice(DEFAULT_WILDCARD_NAMES).every((s) => s === 403)).toBe(true);
    const first = Array.from({ length: DEFAULT_WILDCARD_NAMES }, (_, i) => `data${i}.example.org`);
    expect(resolver.asked).toEqual(first);
    // Each distinct name looked up is in the records, once.
    await eventually(() => gw.records.length === 200);
    expect(gw.records.flatMap((r) => (r.lookedUp === undefined ? [] : [r.lookedUp]))).toEqual(first);
    const reason = bound("*.example.org", DEFAULT_WILDCARD_NAMES);
    expect(gw.records.at(-1)).toMatchObject({
      host: "data199.example.org",
      allowed: false,
      status: 403,
      reason,
    });
    expect(gw.call.denied).toHaveLength(200 - DEFAULT_WILDCARD_NAMES);
    expect(gw.call.denied[0]).toEqual({
      host: `data${DEFAULT_WILDCARD_NAMES}.example.org`,
      port: origin.port,
      reason,
    });
    expect(origin.accepted()).toBe(DEFAULT_WILDCARD_NAMES);
  });

  it("counts names as DNS sees them: another spelling of a name looked up is not new, its case or a trailing dot is no channel", async () => {
    await using origin = await echoOrigin();
    const resolver = countingLookup();
    await using gw = await startGateway({
      allowHosts: [`*.example.org:${origin.port}`],
      lookup: resolver.lookup,
      wildcardNames: 2,
    });
    const socketPath = gw.gateway.socketPath;
    expect((await tunnelStatus(socketPath, `one.example.org:${origin.port}`)).status).toBe(200);
    expect((await tunnelStatus(socketPath, `ONE.Example.ORG.:${origin.port}`)).status).toBe(200);
    expect((await tunnelStatus(socketPath, `Two.example.org:${origin.port}`)).status).toBe(200);
    // Names already looked up still pass once the bound is reached; new ones do not, in any spelling.
    expect((await tunnelStatus(socketPath, `two.example.org.:${origin.port}`)).status).toBe(200);
    const third = await tunnelStatus(socketPath, `THREE.example.org:${origin.port}`);
    expect(third.status).toBe(403);
    expect(third.text).toContain(bound("*.example.org", 2));
    expect(resolver.asked.map((n) => n.toLowerCase())).not.toContain("three.example.org");
    // Only canonical (lower-case) names ever reach the resolver.
    expect(resolver.asked).toEqual([
      "one.example.org",
      "one.example.org",
      "two.example.org",
      "two.example.org",
    ]);
    await eventually(() => gw.records.length === 5);
    expect(gw.records.flatMap((r) => (r.lookedUp === undefined ? [] : [r.lookedUp]))).toEqual([
      "one.example.org",
      "two.example.org",
    ]);
  });

  it("bounds each wildcard entry on its own, and plain HTTP like CONNECT", async () => {
    await using origin = await echoOrigin();
    const resolver = countingLookup();
    await using gw = await startGateway({
      allowHosts: [`*.example.org:${origin.port}`, `*.example.net:${origin.port}`],
      lookup: resolver.lookup,
      wildcardNames: 1,
    });
    const socketPath = gw.gateway.socketPath;
    expect((await tunnelStatus(socketPath, `a.example.org:${origin.port}`)).status).toBe(200);
    expect((await tunnelStatus(socketPath, `a.example.net:${origin.port}`)).status).toBe(200);
    const refused = await plainStatus(socketPath, `http://b.example.org:${origin.port}/`);
    expect(refused.status).toBe(403);
    expect(refused.body).toContain(bound("*.example.org", 1));
    const alsoRefused = await tunnelStatus(socketPath, `b.example.net:${origin.port}`);
    expect(alsoRefused.status).toBe(403);
    expect(alsoRefused.text).toContain(bound("*.example.net", 1));
    expect(resolver.asked).toEqual(["a.example.org", "a.example.net"]);
  });

  it("does not bound exact names, and never looks up an IP literal or a name the allowlist refuses", async () => {
    await using origin = await echoOrigin();
    const resolver = countingLookup();
    await using gw = await startGateway({
      allowHosts: [`example.com:${origin.port}`, `127.0.0.1:${origin.port}`, `*.example.org:${origin.port}`],
      lookup: resolver.lookup,
      wildcardNames: 1,
    });
    const socketPath = gw.gateway.socketPath;
    for (let i = 0; i < 3; i += 1) {
      expect((await tunnelStatus(socketPath, `example.com:${origin.port}`)).status).toBe(200);
    }
    for (const literal of ["127.0.0.1", "0x7f.1", "2130706433", "[::ffff:127.0.0.1]"]) {
      expect((await tunnelStatus(socketPath, `${literal}:${origin.port}`)).status).toBe(200);
    }
    for (let i = 0; i < 20; i += 1) {
      expect((await tunnelStatus(socketPath, `data${i}.example.net:${origin.port}`)).status).toBe(403);
      expect((await tunnelStatus(socketPath, `data${i}.example.org:443`)).status).toBe(403);
    }
    expect(resolver.asked).toEqual(["example.com", "example.com", "example.com"]);
    await eventually(() => gw.records.length === 47);
    expect(gw.records.every((r) => r.lookedUp === undefined)).toBe(true);
  });

  it("refuses a bound that is not a positive integer", async () => {
    await expect(
      EgressGateway.start({
        socketDir: "/nonexistent-never-created",
        allowHosts: ["*.example.org"],
        allowPrivate: false,
        limitBytes: 1,
        maxConnections: 1,
        idleMs: 1,
        maxConnectionMs: 1,
        wildcardNames: 0,
      }),
    ).rejects.toThrow(ConfigError);
  });
});
