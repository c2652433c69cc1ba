/**
 * Serves an MCP session over this process's stdin and stdout until the client goes (stdin ends or
 * fails), an answer cannot be written (the client is gone: EPIPE), or `stop` is aborted (the
 * session's end: SIGTERM, SIGHUP, Ctrl-C). stdout is the protocol channel: for the session's length
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
    const ended = new Promise<"client" | "stop" | "gone">((resolve) => {
      // The SDK's stdio transport does not watch for the end of stdin: a client that exits is seen here.
      process.stdin.once("end", () => resolve("client"));
      process.stdin.once("close", () => resolve("client"));
      process.stdin.once("error", () => resolve("client"));
      // An answer that cannot be written: nobody reads any more (process.stdout's own 'error' ends the
      // session too, process-ends.ts). Without this listener the error crashed harness mid-session.
      protocol.once("error", () => resolve("gone"));
      session.server.onclose = () => resolve("client");
      if (stop.aborted) resolve("stop");
      stop.addEventListener("abort", () => resolve("stop"), { once: true });
    });
    await session.server.connect(transport);
    // A client that closes stdin (the spec's way to end a stdio session) gets the answers to the calls
    // it already sent; a stop (SIGTERM, Ctrl-C) or a client gone kills the running commands instead.
    const how = await ended;
    if (how === "client") await Promise.race([session.idle(), aborted(stop), failed(protocol)]);
    await session.server.close();
    await session.idle();
    if (!protocol.errored) await new Promise<void>((resolve) => protocol.end(() => resolve()));
  } finally {
    stdout.write = ownWrite;
  }
}

/** Settles when `stream` fails (an answer could not be written). */
function failed(stream: Writable): Promise<void> {
  return new Promise((resolve) => {
    if (stream.errored) resolve();
    stream.once("error", () => resolve());
  });
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
}
