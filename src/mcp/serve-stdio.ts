/**
 * Serves an MCP session over this process's stdin and stdout until the client goes (stdin ends) or
 * `stop` is aborted (SIGTERM, Ctrl-C). stdout is the protocol channel: for the session's length
 * every other write to `process.stdout` is sent to stderr, so no stray line can corrupt the protocol.
 */
import { Writable } from "node:stream";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import type { McpSession } from "./mcp-server.js";

export async function serveOverStdio(session: McpSession, stop: AbortSignal): Promise<void> {
  const stdout = process.stdout;
  const ownWrite = stdout.write;
  const protocolWrite = ownWrite.bind(stdout);
  const protocol = new Writable({
    write(chunk: Buffer, _encoding, done) {
      protocolWrite(chunk, (error) => done(error ?? null));
    },
  });
  stdout.write = ((...args: Parameters<typeof process.stderr.write>) =>
    process.stderr.write(...args)) as typeof stdout.write;
  const transport = new StdioServerTransport(process.stdin, protocol);
  try {
    const ended = new Promise<"client" | "stop">((resolve) => {
      // The SDK's stdio transport does not watch for the end of stdin: a client that exits is seen here.
      process.stdin.once("end", () => resolve("client"));
      process.stdin.once("close", () => resolve("client"));
      session.server.onclose = () => resolve("client");
      if (stop.aborted) resolve("stop");
      stop.addEventListener("abort", () => resolve("stop"), { once: true });
    });
    await session.server.connect(transport);
    // A client that closes stdin (the spec's way to end a stdio session) gets the answers to the calls
    // it already sent; a stop (SIGTERM, Ctrl-C) kills the running commands instead.
    if ((await ended) === "client") await Promise.race([session.idle(), aborted(stop)]);
    await session.server.close();
    await session.idle();
    await new Promise<void>((resolve) => protocol.end(resolve));
  } finally {
    stdout.write = ownWrite;
  }
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
}
