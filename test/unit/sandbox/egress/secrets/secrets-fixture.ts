/**
 * Clients of a gateway with secrets, as the sandbox would be: a CONNECT through the gateway's socket
 * then TLS trusting the run's CA (or another), and one request over it whose every received byte is
 * kept (status line, headers, body, trailers, 1xx heads), so a test can ask whether a program in the
 * sandbox could get the value back out of anything it was handed.
 */
import { readFileSync } from "node:fs";
import { request as httpRequest } from "node:http";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import type { TestGateway } from "../gateway-fixture.js";

/** CONNECT through the gateway's socket, then TLS trusting only `ca`. */
export async function tunnel(
  socketPath: string,
  authority: string,
  servername: string,
  ca: string,
): Promise<Socket> {
  const raw = connect(socketPath);
  await new Promise((resolve, reject) => raw.once("connect", resolve).once("error", reject));
  raw.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
  const head = await new Promise<string>((resolve) => raw.once("data", (c: Buffer) => resolve(c.toString())));
  if (!head.startsWith("HTTP/1.1 200")) throw new Error(head);
  const secure = tlsConnect({ socket: raw, servername, ca });
  await new Promise((resolve, reject) => secure.once("secureConnect", resolve).once("error", reject));
  return secure;
}

/** The run CA's certificate, as the sandbox reads it beside the socket. */
export function runCa(gw: TestGateway): string {
  return readFileSync(join(gw.dir, "gw", gw.gateway.trustFiles?.ca ?? ""), "utf8");
}

/** The placeholder of the gateway's first secret. */
export function placeholderOf(gw: TestGateway, index = 0): string {
  return gw.gateway.secretEnv()[index]?.split("=").slice(1).join("=") ?? "";
}

export interface Received {
  status: number;
  /** Everything the client was handed, as latin1 text: status line, headers, body, trailers, 1xx heads. */
  everything: string;
  body: Buffer;
  /** Set when the exchange failed (the gateway cut it off); `everything` then holds what came before. */
  error?: string;
}

export interface Outgoing {
  path: string;
  method?: string;
  headers?: Record<string, string> | string[];
  /** The body, as one piece or in pieces sent apart. */
  body?: string | Buffer | Array<string | Buffer>;
}

/** One request over `createConnection`; never rejects: a cut-off exchange is `error` with what came. */
export function exchange(request: Outgoing, createConnection: () => Socket): Promise<Received> {
  return new Promise((resolve) => {
    const parts: string[] = [];
    const body: Buffer[] = [];
    let status = 0;
    let settled = false;
    const done = (error?: string): void => {
      if (settled) return;
      settled = true;
      const all = Buffer.concat(body);
      resolve({
        status,
        everything: `${parts.join("\n")}\n${all.toString("latin1")}`,
        body: all,
        ...(error === undefined ? {} : { error }),
      });
    };
    const req = httpRequest(
      {
        createConnection,
        path: request.path,
        method: request.method ?? "GET",
        headers: request.headers ?? {},
        setHost: true,
      },
      (res) => {
        status = res.statusCode ?? 0;
        parts.push(`${res.statusCode} ${res.statusMessage}`, ...res.rawHeaders);
        res.on("data", (c: Buffer) => body.push(c));
        res.on("end", () => {
          parts.push(...res.rawTrailers);
          done();
        });
        res.on("error", (e) => done(e.message));
        res.on("aborted", () => done("aborted"));
      },
    );
    req.on("information", (info) =>
      parts.push(`${info.statusCode} ${info.statusMessage}`, ...info.rawHeaders),
    );
    req.on("upgrade", (res, socket, head) => {
      parts.push(`${res.statusCode} ${res.statusMessage}`, ...res.rawHeaders, head.toString("latin1"));
      socket.on("data", (c: Buffer) => body.push(c));
      socket.on("close", () => done());
    });
    req.on("error", (e) => done(e.message));
    const pieces =
      request.body === undefined ? [] : Array.isArray(request.body) ? [...request.body] : [request.body];
    const next = (): void => {
      const piece = pieces.shift();
      if (piece === undefined) {
        req.end();
        return;
      }
      req.write(piece);
      setTimeout(next, 5);
    };
    next();
  });
}
