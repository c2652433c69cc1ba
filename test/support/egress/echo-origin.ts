/**
 * A hostile origin for `--secret` tests: it echoes the request's Authorization header (which, on the
 * way to the secret's own host, carries the real value) back in the form its path names, the ways
 * servers transform what they reflect. `GET /form/b64url` answers the header base64url-encoded;
 * `GET /form/te-gzip` answers it under `Transfer-Encoding: gzip, chunked`; and so on. Every request
 * is recorded whole. Plain HTTP or TLS, on 127.0.0.1.
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { brotliCompressSync, deflateSync, gzipSync } from "node:zlib";

export interface EchoSeen {
  method: string;
  url: string;
  headers: IncomingMessage["rawHeaders"];
  body: string;
}

type Form = (text: string, res: ServerResponse, req: IncomingMessage) => void;

const enc = (text: string): Buffer => Buffer.from(text, "utf8");
const hex = (text: string): string => enc(text).toString("hex");
const percentAll = (text: string): string =>
  [...enc(text)].map((b) => `%${b.toString(16).padStart(2, "0").toUpperCase()}`).join("");
const jsonU = (text: string): string =>
  [...text].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("");
const qp = (text: string): string => {
  const all = [...enc(text)].map((b) => `=${b.toString(16).padStart(2, "0").toUpperCase()}`).join("");
  return all.replace(/(.{24})/g, "$1=\r\n");
};
const wrap = (text: string, width: number, eol: string): string =>
  text.replace(new RegExp(`(.{${width}})`, "g"), `$1${eol}`);
const HTML_NAMED: Record<string, string> = {
  "/": "&sol;",
  "+": "&plus;",
  "=": "&equals;",
  ":": "&colon;",
  ".": "&period;",
  _: "&lowbar;",
};

/** What a plain form answers: a 200 with this body (and these headers). */
interface Answer {
  body: string | Buffer;
  headers?: Record<string, string>;
}

/** Forms that are a 200 whose body (and maybe a header) is the header text, transformed. */
const BODY_FORMS: Record<string, (t: string) => Answer> = {
  raw: (t) => ({ body: t, headers: { "x-echo": t } }),
  upper: (t) => ({ body: t.toUpperCase() }),
  lower: (t) => ({ body: t.toLowerCase() }),
  reversed: (t) => ({ body: [...t].reverse().join("") }),
  b64: (t) => ({ body: enc(t).toString("base64"), headers: { "x-echo": enc(t).toString("base64") } }),
  "b64-lead1": (t) => ({ body: enc(`!${t}`).toString("base64") }),
  "b64-lead2": (t) => ({ body: enc(`!!${t}`).toString("base64") }),
  b64url: (t) => ({ body: enc(t).toString("base64url") }),
  "b64url-lead1": (t) => ({ body: enc(`?${t}`).toString("base64url") }),
  "b64-mime": (t) => ({ body: wrap(enc(`MIME ${t} ${t}`).toString("base64"), 12, "\r\n") }),
  "b64-json-wrapped": (t) => ({
    body: JSON.stringify({ content: wrap(enc(`file ${t}\n`).toString("base64"), 10, "\n") }),
  }),
  hex: (t) => ({ body: hex(t) }),
  HEX: (t) => ({ body: hex(t).toUpperCase() }),
  "hex-spaced": (t) => ({ body: hex(t).replace(/(..)/g, "$1 ") }),
  "percent-all": (t) => ({ body: percentAll(t) }),
  "percent-all-lower": (t) => ({ body: percentAll(t).toLowerCase() }),
  "percent-some": (t) => ({ body: [...t].map((c, i) => (i % 2 === 0 ? percentAll(c) : c)).join("") }),
  "percent-u": (t) => ({
    body: [...t].map((c) => `%u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join(""),
  }),
  "json-u": (t) => ({ body: `{"auth":"${jsonU(t)}"}`, headers: { "x-echo": jsonU(t) } }),
  "json-some-u": (t) => ({
    body: `{"auth":"${[...t].map((c, i) => (i % 3 === 1 ? jsonU(c) : c)).join("")}"}`,
  }),
  "json-slash": (t) => ({ body: JSON.stringify({ auth: t }).replaceAll("/", "\\/") }),
  "c-hex": (t) => ({ body: [...enc(t)].map((b) => `\\x${b.toString(16).padStart(2, "0")}`).join("") }),
  "c-octal": (t) => ({ body: [...enc(t)].map((b) => `\\${b.toString(8).padStart(3, "0")}`).join("") }),
  "html-dec": (t) => ({ body: [...t].map((c) => `&#${c.charCodeAt(0)};`).join("") }),
  "html-hex": (t) => ({ body: [...t].map((c) => `&#x${c.charCodeAt(0).toString(16)};`).join("") }),
  "html-nosemi": (t) => ({ body: [...t].map((c) => `&#${c.charCodeAt(0)}`).join("") }),
  "html-named": (t) => ({ body: [...t].map((c) => HTML_NAMED[c] ?? c).join("") }),
  "quoted-printable": (t) => ({ body: qp(t) }),
  "ce-gzip": (t) => ({ body: gzipSync(t), headers: { "content-encoding": "gzip" } }),
  "ce-deflate": (t) => ({ body: deflateSync(t), headers: { "content-encoding": "deflate" } }),
  "ce-br": (t) => ({ body: brotliCompressSync(t), headers: { "content-encoding": "br" } }),
  "ce-gzip-gzip": (t) => ({ body: gzipSync(gzipSync(t)), headers: { "content-encoding": "gzip, gzip" } }),
  "ce-zstd": (t) => ({ body: gzipSync(t), headers: { "content-encoding": "zstd" } }),
  "ce-unknown": (t) => ({ body: gzipSync(t), headers: { "content-encoding": "x-harness-test" } }),
};

/** Forms that need more than a 200 with a body. */
const SPECIAL_FORMS: Record<string, Form> = {
  "te-gzip": (t, res) => {
    res.writeHead(200, { "content-type": "text/plain", "transfer-encoding": "gzip, chunked" });
    res.end(gzipSync(t));
  },
  "te-deflate": (t, res) => {
    res.writeHead(200, { "content-type": "text/plain", "transfer-encoding": "deflate, chunked" });
    res.end(deflateSync(t));
  },
  "te-gzip-close": (t, res) =>
    rawAnswer(
      res,
      Buffer.concat([
        enc("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nConnection: close\r\n\r\n"),
        gzipSync(t),
      ]),
    ),
  "split-bytes": (t, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    writeSlowly(
      res,
      [...enc(`value=${t};`)].map((b) => Buffer.from([b])),
    );
  },
  "split-percent": (t, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    writeSlowly(
      res,
      [...percentAll(t)].map((c) => enc(c)),
    );
  },
  "early-hints": (t, res) => {
    res.writeEarlyHints({ link: `</x?${t}>; rel=preload`, "x-echo": t });
    res.writeHead(200, { "content-type": "text/plain" }).end("ok");
  },
  trailer: (t, res) => {
    res.writeHead(200, { "content-type": "text/plain", trailer: "x-echo" });
    res.write("ok");
    res.addTrailers({ "x-echo": t });
    res.end();
  },
  upgrade: (t, res) =>
    rawAnswer(
      res,
      enc(
        `HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: upgrade\r\nX-Echo: ${t}\r\n\r\n${t}`,
      ),
    ),
  status: (t, res) =>
    rawAnswer(
      res,
      enc(`HTTP/1.1 200 ${enc(t).toString("base64")}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok`),
    ),
  /** A byte range of `value=<header>;` as asked (one range, or several as multipart/byteranges). */
  range: (t, res, req) => {
    const whole = enc(`value=${t};`);
    const ranges = /^bytes=(.+)$/.exec(req.headers.range ?? "")?.[1]?.split(",") ?? [];
    const parts = ranges.map((r) => {
      const [from = "0", to = ""] = r.trim().split("-");
      const start = Number(from);
      const end = to === "" ? whole.length - 1 : Math.min(Number(to), whole.length - 1);
      return { start, end, bytes: whole.subarray(start, end + 1) };
    });
    if (parts.length === 0) {
      res.writeHead(200, { "content-type": "text/plain", "accept-ranges": "bytes" }).end(whole);
    } else if (parts.length === 1 && parts[0] !== undefined) {
      const { start, end, bytes } = parts[0];
      res
        .writeHead(206, {
          "content-range": `bytes ${start}-${end}/${whole.length}`,
          "content-type": "text/plain",
        })
        .end(bytes);
    } else {
      const boundary = "RANGE_BOUNDARY";
      const chunks = parts.flatMap(({ start, end, bytes }) => [
        enc(
          `--${boundary}\r\nContent-Type: text/plain\r\nContent-Range: bytes ${start}-${end}/${whole.length}\r\n\r\n`,
        ),
        bytes,
        enc("\r\n"),
      ]);
      res.writeHead(206, { "content-type": `multipart/byteranges; boundary=${boundary}` });
      res.end(Buffer.concat([...chunks, enc(`--${boundary}--\r\n`)]));
    }
  },
};

/** Every form's name: what `GET /form/NAME` answers. */
export const ECHO_FORMS: readonly string[] = [...Object.keys(BODY_FORMS), ...Object.keys(SPECIAL_FORMS)];

function answer(name: string, text: string, res: ServerResponse, req: IncomingMessage): void {
  const plain = BODY_FORMS[name];
  if (plain !== undefined) {
    const { body, headers = {} } = plain(text);
    res.writeHead(200, { "content-type": "text/plain", ...headers }).end(body);
    return;
  }
  const special = SPECIAL_FORMS[name];
  if (special === undefined) res.writeHead(404).end(`no form ${name}`);
  else special(text, res, req);
}

/** Writes the answer's bytes on the socket itself (framings Node's server would not produce). */
function rawAnswer(res: ServerResponse, bytes: Buffer): void {
  const socket = res.socket as Socket;
  res.detachSocket(socket);
  socket.end(bytes);
}

function writeSlowly(res: ServerResponse, chunks: Buffer[]): void {
  const next = (): void => {
    const chunk = chunks.shift();
    if (chunk === undefined) {
      res.end();
      return;
    }
    res.write(chunk);
    setTimeout(next, 2);
  };
  next();
}

export interface EchoOrigin {
  port: number;
  seen: EchoSeen[];
  close(): Promise<void>;
}

/** Starts the echo origin on `address` (TLS when `tls` is given). HEAD answers the echo in a header. */
export async function startEchoOrigin(
  tls?: { cert: string; key: string },
  address = "127.0.0.1",
): Promise<EchoOrigin> {
  const seen: EchoSeen[] = [];
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      seen.push({
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.rawHeaders,
        body: Buffer.concat(chunks).toString("latin1"),
      });
      const text = req.headers.authorization ?? "";
      if (req.method === "HEAD") {
        res.writeHead(200, { "x-echo": text, "x-echo-b64": enc(text).toString("base64") }).end();
        return;
      }
      const name = /^\/form\/([^/?]+)/.exec(req.url ?? "")?.[1] ?? "raw";
      answer(name, text, res, req);
    });
  };
  const server: Server = tls ? createHttpsServer(tls, handler) : createHttpServer(handler);
  server.on("upgrade", (req: IncomingMessage, socket: Socket) => {
    socket.end(
      `HTTP/1.1 101 Switching Protocols\r\nUpgrade: echo\r\nConnection: upgrade\r\n\r\n${req.headers.authorization ?? ""}`,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
