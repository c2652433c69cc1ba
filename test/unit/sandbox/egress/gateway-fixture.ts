/**
 * Loopback pieces for the gateway tests: a gateway in a temporary directory whose resolver maps
 * documentation names to loopback (never a real DNS lookup), origin servers on 127.0.0.1 that count
 * what reaches them, and clients that talk to the gateway's Unix socket like the sandbox's relay.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from "node:http";
import { connect, createServer, type Server as NetServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type CallTag,
  EgressGateway,
  type GatewayOptions,
} from "../../../../src/sandbox/egress/egress-gateway.js";
import type { EgressRecord } from "../../../../src/sandbox/sandbox.js";

/** Names the injected resolver knows; anything else does not resolve. */
export const NAMES: Readonly<Record<string, string>> = {
  "example.com": "127.0.0.1",
  "example.org": "127.0.0.1",
  "api.example.org": "127.0.0.1",
  "a.b.example.org": "127.0.0.1",
  "origin.test": "127.0.0.1",
  "metadata.test": "169.254.169.254",
};

export interface TestGateway extends AsyncDisposable {
  gateway: EgressGateway;
  records: EgressRecord[];
  /** Names the resolver was asked for, in order. */
  lookups: string[];
  /** The tag `currentCall` returns; replace its fields freely. */
  call: CallTag;
  dir: string;
}

export async function startGateway(options: Partial<GatewayOptions> = {}): Promise<TestGateway> {
  const dir = mkdtempSync(join(tmpdir(), "harness-egress-"));
  const lookups: string[] = [];
  const call: CallTag = { callId: "toolu_1", denied: [] };
  const gateway = await EgressGateway.start({
    socketDir: join(dir, "gw"),
    allowHosts: [],
    allowPrivate: true,
    limitBytes: 10 * 1024 * 1024,
    maxConnections: 16,
    idleMs: 10_000,
    maxConnectionMs: 60_000,
    headersTimeoutMs: 2_000,
    currentCall: () => call,
    lookup: async (name) => {
      lookups.push(name);
      const address = NAMES[name];
      if (address === undefined)
        throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${name}`), { code: "ENOTFOUND" });
      return [{ address, family: 4 }];
    },
    ...options,
  });
  const records: EgressRecord[] = [];
  gateway.subscribe((record) => records.push(record));
  return {
    gateway,
    records,
    lookups,
    call,
    dir,
    async [Symbol.asyncDispose]() {
      await gateway.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A TCP echo server on 127.0.0.1 that counts the connections that reach it. */
export async function echoOrigin(): Promise<{
  port: number;
  accepted: () => number;
  open: () => number;
  peak: () => number;
  [Symbol.asyncDispose](): Promise<void>;
}> {
  let accepted = 0;
  let open = 0;
  let peak = 0;
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    accepted += 1;
    open += 1;
    peak = Math.max(peak, open);
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => {
      open -= 1;
      sockets.delete(socket);
    });
    socket.pipe(socket);
  });
  const port = await listenLoopback(server);
  return {
    port,
    accepted: () => accepted,
    open: () => open,
    peak: () => peak,
    async [Symbol.asyncDispose]() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export interface SeenRequest {
  method: string | undefined;
  url: string | undefined;
  headers: IncomingHttpHeaders;
  body: string;
}

/** An HTTP origin on 127.0.0.1 that records each request and answers "hello from origin". */
export async function httpOrigin(): Promise<{
  port: number;
  seen: SeenRequest[];
  connections: () => number;
  [Symbol.asyncDispose](): Promise<void>;
}> {
  const seen: SeenRequest[] = [];
  let connections = 0;
  const server: Server = createHttpServer((req, res) => {
    let body = "";
    req.on("data", (chunk: Buffer) => {
      body += chunk.toString();
    });
    req.on("end", () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      res.writeHead(200, {
        "Content-Type": "text/plain",
        "X-Origin": "yes",
        Connection: "keep-alive, X-Hop",
        "X-Hop": "1",
      });
      res.end("hello from origin");
    });
  });
  server.on("connection", () => {
    connections += 1;
  });
  const port = await listenLoopback(server);
  return {
    port,
    seen,
    connections: () => connections,
    async [Symbol.asyncDispose]() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A loopback port nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  const port = await listenLoopback(server);
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function listenLoopback(server: NetServer): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return address.port;
}

/** A raw client connection to the gateway's socket, with everything it has received so far. */
export interface RawClient {
  socket: Socket;
  received: () => string;
  /** Resolves once the received text matches (or the socket closes: then rejects). */
  waitFor: (pattern: RegExp) => Promise<string>;
  closed: Promise<void>;
}

export async function rawClient(socketPath: string): Promise<RawClient> {
  const socket = connect(socketPath);
  socket.on("error", () => {});
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  let text = "";
  const waiters: Array<() => void> = [];
  socket.on("data", (chunk: Buffer) => {
    text += chunk.toString("latin1");
    for (const wake of waiters.splice(0)) wake();
  });
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  closed.then(() => {
    for (const wake of waiters.splice(0)) wake();
  });
  let isClosed = false;
  closed.then(() => {
    isClosed = true;
  });
  const waitFor = async (pattern: RegExp): Promise<string> => {
    for (;;) {
      if (pattern.test(text)) return text;
      if (isClosed) throw new Error(`closed before ${pattern}; got ${JSON.stringify(text)}`);
      await new Promise<void>((resolve) => waiters.push(resolve));
    }
  };
  return { socket, received: () => text, waitFor, closed };
}

/** Sends `CONNECT authority` and waits for the gateway's answer head. */
export async function connectThrough(
  socketPath: string,
  authority: string,
): Promise<RawClient & { status: number }> {
  const client = await rawClient(socketPath);
  client.socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  const head = await client.waitFor(/\r\n\r\n/);
  return { ...client, status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]) };
}

/** Waits until `check` is true (polling); the test's own timeout bounds it. */
export async function eventually(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((resolve) => setTimeout(resolve, 10));
}
