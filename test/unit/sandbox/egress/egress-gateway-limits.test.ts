/**
 * The gateway's bounds against a slow or hostile client: silent clients, parked tunnels, floods of
 * connects, the byte budget, and closing with tunnels still open.
 */
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { connectThrough, echoOrigin, eventually, rawClient, startGateway } from "./gateway-fixture.js";

describe("EgressGateway limits", () => {
  it("drops a client that connects and never sends a request (headers timeout)", async () => {
    await using gw = await startGateway({ headersTimeoutMs: 200 });
    const client = await rawClient(gw.gateway.socketPath);
    await client.closed;
    expect(gw.records).toEqual([]);
  });

  it("closes an established tunnel that carries no byte for idleMs, and records it as idle", async () => {
    await using origin = await echoOrigin();
    await using gw = await startGateway({ allowHosts: [`example.com:${origin.port}`], idleMs: 200 });
    const client = await connectThrough(gw.gateway.socketPath, `example.com:${origin.port}`);
    expect(client.status).toBe(200);
    await client.closed;
    await eventually(() => gw.records.length === 1 && origin.open() === 0);
    expect(gw.records[0]).toMatchObject({ allowed: true, status: 200, reason: "idle" });
  });

  it("ends a tunnel that lives past maxConnectionMs even while bytes flow", async () => {
    await using origin = await echoOrigin();
    await using gw = await startGateway({ allowHosts: [`example.com:${origin.port}`], maxConnectionMs: 300 });
    const client = await connectThrough(gw.gateway.socketPath, `example.com:${origin.port}`);
    const chatter = setInterval(() => client.socket.write("x"), 20);
    await client.closed;
    clearInterval(chatter);
    await eventually(() => gw.records.length === 1);
    expect(gw.records[0]?.reason).toBe("open longer than the limit of 300 ms");
    expect(gw.records[0]?.bytesUp).toBeGreaterThan(0);
  });

  it("lets at most maxConnections of 1000 parallel CONNECTs reach the origin, and serves again afterwards", async () => {
    await using origin = await echoOrigin();
    await using gw = await startGateway({ allowHosts: [`example.com:${origin.port}`], maxConnections: 8 });
    const statuses: number[] = [];
    let settled = 0;
    const sockets = Array.from({ length: 1000 }, () => {
      const socket = connect(gw.gateway.socketPath);
      const settle = () => {
        settled += 1;
      };
      socket.on("error", () => {});
      socket.on("connect", () => socket.write(`CONNECT example.com:${origin.port} HTTP/1.1\r\n\r\n`));
      socket.once("data", (chunk: Buffer) => {
        statuses.push(Number(chunk.toString("latin1").slice(9, 12)));
        socket.off("close", settle);
        settle();
      });
      socket.once("close", settle);
      return socket;
    });
    // Every socket got an answer or was dropped (accept limit, listen backlog).
    await eventually(() => settled === 1000);
    await eventually(() => statuses.filter((s) => s === 200).length === origin.open());
    expect(origin.peak()).toBeLessThanOrEqual(8);
    expect(statuses.filter((s) => s === 200)).toHaveLength(8);
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    expect(
      gw.records.some((r) => r.status === 503 && r.reason === "too many connections at once (limit 8)"),
    ).toBe(true);
    for (const socket of sockets) socket.destroy();
    await eventually(() => origin.open() === 0);

    const after = await connectThrough(gw.gateway.socketPath, `example.com:${origin.port}`);
    expect(after.status).toBe(200);
    after.socket.write("still here");
    await after.waitFor(/still here$/);
    after.socket.destroy();
  });

  it("ends open tunnels when the byte budget is spent and refuses new ones", async () => {
    await using origin = await echoOrigin();
    await using gw = await startGateway({ allowHosts: [`example.com:${origin.port}`], limitBytes: 1000 });
    const client = await connectThrough(gw.gateway.socketPath, `example.com:${origin.port}`);
    client.socket.write("a".repeat(400));
    await client.waitFor(/a{400}$/);
    client.socket.write("b".repeat(400));
    await client.closed;
    await eventually(() => gw.records.length === 1);
    const reason = "egress limit of 1000 bytes reached (--egress-limit)";
    expect(gw.records[0]).toMatchObject({ allowed: true, reason });
    const carried = (gw.records[0]?.bytesUp ?? 0) + (gw.records[0]?.bytesDown ?? 0);
    expect(carried).toBeLessThanOrEqual(1000);
    expect(client.received()).not.toMatch(/b{400}/);

    const next = await connectThrough(gw.gateway.socketPath, `example.com:${origin.port}`);
    expect(next.status).toBe(403);
    await next.waitFor(/egress limit of 1000 bytes reached \(--egress-limit\)/);
    expect(gw.call.denied).toEqual([{ host: "example.com", port: origin.port, reason }]);
  });

  it("close() ends open tunnels, emits their records and removes the socket", async () => {
    await using origin = await echoOrigin();
    await using gw = await startGateway({ allowHosts: [`example.com:${origin.port}`] });
    const first = await connectThrough(gw.gateway.socketPath, `example.com:${origin.port}`);
    const second = await connectThrough(gw.gateway.socketPath, `example.com:${origin.port}`);
    const idle = await rawClient(gw.gateway.socketPath);
    await gw.gateway.close();
    await Promise.all([first.closed, second.closed, idle.closed]);
    expect(gw.records).toHaveLength(2);
    expect(gw.records.every((r) => r.reason === "the gateway closed")).toBe(true);
    await eventually(() => origin.open() === 0);
    await expect(rawClient(gw.gateway.socketPath)).rejects.toThrow(/ENOENT/);
    await gw.gateway.close();
  });
});
