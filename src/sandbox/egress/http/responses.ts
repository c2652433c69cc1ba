/** The gateway's own answers: short text/plain bodies that say which request and why. */
import { type IncomingMessage, STATUS_CODES } from "node:http";
import type { Socket } from "node:net";

/** The body of a refusal or failure: the host and port as asked, and the reason. */
export function answerBody(host: string, port: number, reason: string): string {
  return `harness egress gateway: ${host}:${port}: ${reason}\n`;
}

/**
 * Writes a whole response on a raw client socket (a CONNECT that is not tunnelled) and closes it.
 * Whatever the client still sends is read and dropped, so closing does not reset the connection
 * before the client has read the answer; it is destroyed after `lingerMs` in any case.
 */
export function answerRaw(socket: Socket, status: number, body: string, lingerMs = 2_000): void {
  const head =
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}\r\n` +
    "Content-Type: text/plain; charset=utf-8\r\n" +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    "Connection: close\r\n\r\n";
  socket.on("error", () => {});
  socket.on("end", () => socket.destroy());
  socket.resume();
  socket.end(head + body);
  setTimeout(() => socket.destroy(), lingerMs).unref();
}

/**
 * The size of a request head as the client sent it (request line, header lines, blank line), from
 * what the parser kept: line folding and spaces around values aside, the bytes on the wire.
 */
export function requestHeadBytes(request: IncomingMessage): number {
  const line = `${request.method ?? ""} ${request.url ?? ""} HTTP/${request.httpVersion}\r\n`;
  return Buffer.byteLength(line, "latin1") + headerLinesBytes(request.rawHeaders) + 2;
}

/** Bytes of `Name: value\r\n` lines for a flat [name, value, …] list, as Node writes them (latin1). */
export function headerLinesBytes(rawHeaders: readonly string[]): number {
  let bytes = 0;
  for (const part of rawHeaders) bytes += Buffer.byteLength(part, "latin1");
  return bytes + 4 * Math.ceil(rawHeaders.length / 2);
}
