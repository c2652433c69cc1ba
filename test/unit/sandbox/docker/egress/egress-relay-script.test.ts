/**
 * The relay program itself, run by the host's python3 against a Unix echo server made here: what it
 * copies, in both directions, with half-closes, under many connections, and when it exits.
 */
import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createConnection, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { relaySource, SOCKET_MISSING } from "../../../../../src/sandbox/docker/egress/egress-relay-script.js";

const hasPython = (() => {
  try {
    execFileSync("python3", ["-c", "import selectors"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();

/** Answers each connection, once the client half-closed, with "<n bytes>:" and what it got. */
function echoServer(path: string): Promise<Server> {
  const server = createServer({ allowHalfOpen: true }, (socket) => {
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("end", () => {
      const got = Buffer.concat(chunks);
      socket.end(Buffer.concat([Buffer.from(`${got.length}:`), got]));
    });
  });
  return new Promise((resolve) => server.listen(path, () => resolve(server)));
}

function startRelay(socketPath: string): {
  child: ChildProcessWithoutNullStreams;
  firstLine: Promise<string>;
} {
  const child = spawn("python3", ["-I", "-S", "-c", relaySource(), socketPath]);
  const firstLine = new Promise<string>((resolve) => {
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("\n")) resolve(out.slice(0, out.indexOf("\n")));
    });
    child.once("exit", () => resolve(out));
  });
  return { child, firstLine };
}

/** Sends `payload`, half-closes, and returns everything that came back. */
function roundTrip(port: number, payload: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: "127.0.0.1", port, allowHalfOpen: true });
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("end", () => resolve(Buffer.concat(chunks)));
    socket.on("error", reject);
    socket.end(payload);
  });
}

// In CI the host has python3 (the CI machine is this kind of Debian host): a missing one fails there, not skips.
describe.skipIf(!hasPython && !process.env["CI"])("the relay script (host python3)", () => {
  let dir: string;
  let server: Server | undefined;
  let relay: ChildProcessWithoutNullStreams | undefined;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "harness-relay-"));
  });
  afterEach(async () => {
    relay?.kill("SIGKILL");
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    rmSync(dir, { recursive: true, force: true });
  });

  it("says its port first, copies both ways with half-closes, big and many, and exits when stdin ends", async () => {
    const socketPath = join(dir, "g.sock");
    server = await echoServer(socketPath);
    const started = startRelay(socketPath);
    relay = started.child;
    const line = await started.firstLine;
    expect(line).toMatch(/^PORT [0-9]+$/);
    const port = Number(line.split(" ")[1]);
    expect((await roundTrip(port, Buffer.from("hello"))).toString()).toBe("5:hello");
    const big = Buffer.alloc(8 * 1024 * 1024, 7);
    const back = await roundTrip(port, big);
    expect(back.length).toBe(big.length + `${big.length}:`.length);
    const many = await Promise.all(
      Array.from({ length: 300 }, (_, i) => roundTrip(port, Buffer.from(`n${i}`))),
    );
    expect(many.map((b) => b.toString())).toEqual(
      Array.from({ length: 300 }, (_, i) => `${`n${i}`.length}:n${i}`),
    );
    const exited = new Promise<number | null>((resolve) => relay?.once("exit", resolve));
    relay.stdin.end();
    expect(await exited).toBe(0);
  });

  it("closes a client at once when the gateway is not listening", async () => {
    const socketPath = join(dir, "g.sock");
    server = await echoServer(socketPath);
    const started = startRelay(socketPath);
    relay = started.child;
    const port = Number((await started.firstLine).split(" ")[1]);
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    server = undefined;
    // The relay closes with our byte unread, so the kernel may answer with a reset instead of an end.
    const back = await roundTrip(port, Buffer.from("x")).then(
      (data) => data.length,
      (error: NodeJS.ErrnoException) => error.code,
    );
    expect([0, "ECONNRESET"]).toContain(back);
  });

  it("says so, and exits, when the socket is not there", async () => {
    const started = startRelay(join(dir, "missing.sock"));
    relay = started.child;
    expect(await started.firstLine).toMatch(new RegExp(`^${SOCKET_MISSING}: `));
    const code = await new Promise<number | null>((resolve) => {
      if (relay?.exitCode !== null) resolve(relay?.exitCode ?? null);
      relay?.once("exit", resolve);
    });
    expect(code).toBe(3);
  });
});
