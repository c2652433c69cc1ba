/**
 * `--egress-limit` counts every byte that crosses the gateway for the sandbox, heads included: request
 * lines and headers to the origin, response heads from it, CONNECT heads and the gateway's answer to
 * them. A task sending header-only requests must not carry more than the limit out.
 */
import { createServer as createHttpServer, request as httpRequest } from "node:http";
import type { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import { echoOrigin, eventually, rawClient, startGateway } from "./gateway-fixture.js";

const LIMIT = 100_000;
const FILL = "f".repeat(8_000);
const REASON = `egress limit of ${LIMIT} bytes reached (--egress-limit)`;

/** An HTTP origin on 127.0.0.1 that counts every byte it receives and sends, heads included. */
async function countingOrigin(responseFill = "") {
  let received = 0;
  let sent = 0;
  let requests = 0;
  const sockets = new Set<Socket>();
  const server = createHttpServer((req, res) => {
    req.resume();
    req.on("end", () => {
      requests += 1;
      res.writeHead(200, responseFill === "" ? {} : { "X-Fill": responseFill });
      res.end();
    });
  });
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.on("data", (chunk: Buffer) => {
      received += chunk.length;
    });
    socket.on("close", () => {
      sent += socket.bytesWritten;
      sockets.delete(socket);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return {
    port: address.port,
    received: () => received,
    /** Bytes written on connections that have closed. */
    sent: () => sent,
    requests: () => requests,
    open: () => sockets.size,
    async [Symbol.asyncDispose]() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

interface Answer {
  status: number | undefined;
  body: string;
  /** Bytes of response head and body the client got. */
  headBytes: number;
  error?: string;
}

/** One plain-HTTP request through the gateway's socket, as a proxy client sends it. */
function proxied(socketPath: string, url: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve) => {
    const req = httpRequest({ socketPath, method: "GET", path: url, headers, agent: false }, (res) => {
      let body = "";
      res.setEncoding("latin1");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      const headBytes = res.rawHeaders.reduce((sum, part) => sum + Buffer.byteLength(part) + 2, 0);
      res.on("end", () => resolve({ status: res.statusCode, body, headBytes }));
      res.on("error", (error) => resolve({ status: res.statusCode, body, headBytes, error: error.message }));
    });
    req.on("error", (error) => resolve({ status: undefined, body: "", headBytes: 0, error: error.message }));
    req.end();
  });
}

describe("EgressGateway byte budget", () => {
  it("counts request heads: 250 header-only requests with 8 KB headers carry no more than the limit", async () => {
    await using origin = await countingOrigin();
    await using gw = await startGateway({ allowHosts: [`example.com:${origin.port}`], limitBytes: LIMIT });
    const answers: Answer[] = [];
    for (let i = 0; i < 250; i += 1) {
      answers.push(
        await proxied(gw.gateway.socketPath, `http://example.com:${origin.port}/`, { "X-Fill": FILL }),
      );
    }
    await eventually(() => origin.open() === 0);
    // Everything the origin got (request lines, headers) plus what it sent back fits in the limit.
    expect(origin.received() + origin.sent()).toBeLessThanOrEqual(LIMIT);
    expect(origin.requests()).toBeLessThan(LIMIT / FILL.length);
    expect(answers.filter((a) => a.status === 200).length).toBe(origin.requests());
    // Past the budget, requests are refused with the limit's reason, and the records say so.
    expect(answers.at(-1)).toMatchObject({ status: 403 });
    expect(answers.at(-1)?.body).toContain(REASON);
    expect(gw.records.at(-1)).toMatchObject({ allowed: false, status: 403, reason: REASON });
    const totals = gw.gateway.totals();
    expect(totals.bytesUp).toBeGreaterThanOrEqual(origin.received());
    expect(totals.bytesUp + totals.bytesDown).toBeLessThanOrEqual(LIMIT);
  });

  it("counts the heads of requests pipelined on one keep-alive client connection", async () => {
    await using origin = await countingOrigin();
    await using gw = await startGateway({ allowHosts: [`example.com:${origin.port}`], limitBytes: LIMIT });
    const client = await rawClient(gw.gateway.socketPath);
    const one = `GET http://example.com:${origin.port}/ HTTP/1.1\r\nHost: example.com\r\nX-Fill: ${FILL}\r\n\r\n`;
    // Node reads them all at once: up to maxConnections are forwarded together, the rest wait or get 503.
    client.socket.write(one.repeat(60));
    // Spending the budget ends every open connection, this client's too.
    await client.closed;
    await eventually(() => origin.open() === 0);
    expect(origin.received() + origin.sent()).toBeLessThanOrEqual(LIMIT);
    expect(origin.requests()).toBeLessThan(LIMIT / FILL.length);
    expect(gw.records.some((r) => r.reason === REASON)).toBe(true);
  });

  it("counts response heads: 250 requests answered with 8 KB headers bring no more than the limit", async () => {
    await using origin = await countingOrigin(FILL);
    await using gw = await startGateway({ allowHosts: [`example.com:${origin.port}`], limitBytes: LIMIT });
    let headBytes = 0;
    let ok = 0;
    for (let i = 0; i < 250; i += 1) {
      const answer = await proxied(gw.gateway.socketPath, `http://example.com:${origin.port}/`);
      if (answer.status === 200) {
        ok += 1;
        headBytes += answer.headBytes;
      }
    }
    expect(headBytes).toBeLessThanOrEqual(LIMIT);
    expect(ok).toBeLessThan(LIMIT / FILL.length);
    expect(gw.records.at(-1)).toMatchObject({ allowed: false, status: 403, reason: REASON });
  });

  it("counts CONNECT heads and the gateway's answer to them against the limit", async () => {
    await using origin = await echoOrigin();
    await using gw = await startGateway({ allowHosts: [`example.com:${origin.port}`], limitBytes: LIMIT });
    const statuses: number[] = [];
    for (let i = 0; i < 250; i += 1) {
      const client = await connectThroughWithHeader(gw.gateway.socketPath, `example.com:${origin.port}`);
      statuses.push(client.status);
      client.socket.destroy();
      await client.closed;
    }
    const tunnels = statuses.filter((s) => s === 200).length;
    expect(tunnels).toBeGreaterThan(0);
    expect(tunnels * FILL.length).toBeLessThanOrEqual(LIMIT);
    expect(statuses.at(-1)).toBe(403);
    await eventually(() => gw.records.length === 250);
    expect(gw.records.at(-1)).toMatchObject({
      method: "CONNECT",
      allowed: false,
      status: 403,
      reason: REASON,
    });
  });
});

/** `CONNECT authority` with an 8 KB header, waiting for the gateway's answer head. */
async function connectThroughWithHeader(socketPath: string, authority: string) {
  const client = await rawClient(socketPath);
  client.socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\nX-Fill: ${FILL}\r\n\r\n`);
  const head = await client.waitFor(/\r\n\r\n/);
  return { ...client, status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]) };
}
