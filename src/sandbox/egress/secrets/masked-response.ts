/**
 * A response from a host a secret goes to, with the secret's value taken back out before it reaches
 * the sandbox: an origin that echoes a header, a query or something it stored earlier must not hand
 * the value to the task. Its headers are masked; its body is decoded when compressed (so an echo
 * inside gzip is seen too), masked, and sent without Content-Length (the placeholder's length differs
 * from the value's) and without Content-Encoding.
 */
import type { Transform } from "node:stream";
import { createBrotliDecompress, createGunzip, createInflate } from "node:zlib";
import { endToEndHeaders } from "../http/hop-by-hop.js";
import type { SecretBook } from "./secret-book.js";

const DECODERS: Record<string, () => Transform> = {
  gzip: createGunzip,
  "x-gzip": createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

export function maskedResponse(
  book: SecretBook,
  masked: readonly string[],
  rawHeaders: readonly string[],
  method: string,
  status: number,
): { ok: true; headers: string[]; body: Transform[] } | { ok: false; reason: string } {
  const headers = book.maskHeaders(rawHeaders, masked);
  if (method === "HEAD" || status === 204 || status === 304 || (status >= 100 && status < 200)) {
    return { ok: true, headers, body: [] };
  }
  const encodings = headerValues(headers, "content-encoding")
    .flatMap((value) => value.split(","))
    .map((token) => token.trim().toLowerCase())
    .filter((token) => token !== "" && token !== "identity");
  const decoders: Transform[] = [];
  // Encodings are listed in the order they were applied: undo them last first.
  for (const encoding of encodings.reverse()) {
    const decoder = DECODERS[encoding];
    if (decoder === undefined) {
      return {
        ok: false,
        reason: `the response is encoded as "${encoding}", which the gateway cannot check for the secret's value`,
      };
    }
    decoders.push(decoder());
  }
  const drop = ["content-length", ...(decoders.length > 0 ? ["content-encoding"] : [])];
  return { ok: true, headers: endToEndHeaders(headers, drop), body: [...decoders, book.maskBody(masked)] };
}

function headerValues(rawHeaders: readonly string[], name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (rawHeaders[i]?.toLowerCase() === name) values.push(rawHeaders[i + 1] ?? "");
  }
  return values;
}
