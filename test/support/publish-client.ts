/**
 * What the `--publish` tests on every engine share: a free host port, a host HTTP client and a raw
 * TCP client, servers started in the sandbox's background, and waiting for something to show.
 */
import { get } from "node:http";
import { type AddressInfo, connect, createServer } from "node:net";
import { expect } from "vitest";
import type { Sandbox } from "../../src/sandbox/sandbox.js";

/** A port nothing on the host listens on now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** GETs `url`: status and body. */
export function fetchBytes(url: string): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(url, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    }).on("error", reject);
  });
}

/** Sends `data` on a raw TCP connection, half-closes, and collects everything that comes back. */
export function exchange(port: number, data: Buffer, host = "127.0.0.1"): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host, port }, () => socket.end(data));
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("close", () => resolve(Buffer.concat(chunks)));
    socket.on("error", reject);
  });
}

/** Whether a TCP connection to host:port is accepted. */
export function accepts(port: number, host = "127.0.0.1"): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on("error", () => resolve(false));
  });
}

/** Looks every 100 ms, up to 100 times, until `look` finds something. */
export async function until<T>(look: () => Promise<T | undefined>, what: string): Promise<T> {
  for (let i = 0; i < 100; i++) {
    const found = await look();
    if (found !== undefined) return found;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`gave up waiting for ${what}`);
}

/** Starts `server` in the sandbox's background and waits until its port accepts (inside). */
export async function startInSandbox(sandbox: Sandbox, server: string, port: number): Promise<void> {
  await sandbox.exec(`nohup ${server} > /tmp/server-${port}.log 2>&1 &`);
  const ready = await sandbox.exec(
    `for i in $(seq 100); do (: > /dev/tcp/127.0.0.1/${port}) 2>/dev/null && exit 0; sleep 0.1; done; exit 1`,
  );
  expect(ready.exitCode).toBe(0);
}

/** A server on the sandbox's 127.0.0.1:PORT that echoes each connection until its client half-closes. */
export const ECHO_SERVER = (port: number) =>
  `python3 -c 'import socket
s = socket.create_server(("127.0.0.1", ${port}))
while True:
    c, _ = s.accept()
    while True:
        d = c.recv(65536)
        if not d: break
        c.sendall(d)
    c.close()'`;

/** 3 MiB that are not all one byte. */
export function patternBytes(size = 3 * 1024 ** 2): Buffer {
  const data = Buffer.alloc(size);
  for (let i = 0; i < data.length; i++) data[i] = (i * 7919) % 251;
  return data;
}
