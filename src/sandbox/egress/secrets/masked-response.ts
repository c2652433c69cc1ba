/**
 * A response from a host a secret goes to, with the secret's value taken back out, in every form a
 * program could decode back, before it reaches the sandbox: an origin that echoes a header, a query
 * or something it stored earlier must not hand the value to the task. Its status line and headers are
 * masked; its body is undone of its transfer and content codings (so an echo inside gzip is seen too),
 * masked, and sent without Content-Length (the placeholder's length differs from the value's) and
 * without Content-Encoding. What cannot be checked whole is cut off: a coding the gateway cannot
 * undo, and a partial response (206), whose parts could each hold a piece of the value.
 *
 * The request is shaped so that a willing origin never needs that: no Range, and an Accept-Encoding
 * of the codings the gateway undoes. (1xx heads, trailers and 101 upgrades are never relayed at all.)
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

/** The codings listed in `name` headers, in the order they were applied, without "identity". */
function codings(rawHeaders: readonly string[], name: string): string[] {
  return headerValues(rawHeaders, name)
    .flatMap((value) => value.split(","))
    .map((token) => token.trim().toLowerCase())
    .filter((token) => token !== "" && token !== "identity");
}

/** Decoders that undo `applied` (last applied first), or the coding that cannot be undone. */
export function decodersFor(
  applied: readonly string[],
): { ok: true; decoders: Transform[] } | { ok: false; coding: string } {
  const decoders: Transform[] = [];
  for (const coding of [...applied].reverse()) {
    const decoder = DECODERS[coding];
    if (decoder === undefined) return { ok: false, coding };
    decoders.push(decoder());
  }
  return { ok: true, decoders };
}

export function maskedResponse(
  book: SecretBook,
  masked: readonly string[],
  /** The response's end-to-end headers (hop-by-hop ones already dropped). */
  rawHeaders: readonly string[],
  /** The response's headers as they came, for its Transfer-Encoding. */
  wireHeaders: readonly string[],
  method: string,
  status: number,
): { ok: true; headers: string[]; body: Transform[] } | { ok: false; reason: string } {
  const headers = book.maskHeaders(rawHeaders, masked);
  if (status === 206 || headerValues(rawHeaders, "content-range").length > 0) {
    return {
      ok: false,
      reason:
        "a secret's host answered with part of a response (206, Content-Range), which the gateway cannot check whole",
    };
  }
  if (method === "HEAD" || status === 204 || status === 304 || (status >= 100 && status < 200)) {
    return { ok: true, headers, body: [] };
  }
  // Node has taken chunked framing off; any other transfer coding is still on the body (outermost).
  const transfer = codings(wireHeaders, "transfer-encoding");
  if (transfer.includes("chunked") && transfer.at(-1) !== "chunked") {
    return { ok: false, reason: "the response's Transfer-Encoding does not end with chunked" };
  }
  const applied = [...codings(rawHeaders, "content-encoding"), ...transfer.filter((c) => c !== "chunked")];
  const decoded = decodersFor(applied);
  if (!decoded.ok) {
    return {
      ok: false,
      reason: `the response is encoded as "${decoded.coding}", which the gateway cannot check for the secret's value`,
    };
  }
  const drop = ["content-length", ...(decoded.decoders.length > 0 ? ["content-encoding"] : [])];
  return {
    ok: true,
    headers: endToEndHeaders(headers, drop),
    body: [...decoded.decoders, book.maskBody(masked)],
  };
}

/**
 * A request to a secret's host as the gateway sends it: no Range or If-Range (the whole response
 * comes back, to be checked whole), and Accept-Encoding narrowed to the codings the gateway undoes.
 */
export function requestForMasking(rawHeaders: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] ?? "";
    const lower = name.toLowerCase();
    if (lower === "range" || lower === "if-range") continue;
    if (lower === "accept-encoding") {
      const accepted = (rawHeaders[i + 1] ?? "")
        .split(",")
        .map((token) => token.trim())
        .filter((token) => (token.split(";")[0] ?? "").trim().toLowerCase() in DECODERS);
      kept.push(name, accepted.length > 0 ? accepted.join(", ") : "identity");
      continue;
    }
    kept.push(name, rawHeaders[i + 1] ?? "");
  }
  return kept;
}

function headerValues(rawHeaders: readonly string[], name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (rawHeaders[i]?.toLowerCase() === name) values.push(rawHeaders[i + 1] ?? "");
  }
  return values;
}
