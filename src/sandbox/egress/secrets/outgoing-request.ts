/**
 * A request as it leaves the gateway when the run has secrets: refused when it carries a value or
 * placeholder, in any form, to a host that is not the secret's (its head now, its body as it
 * streams); the placeholders of the host's own secrets swapped for their values; a request to a
 * secret's host shaped so that its response can be checked whole (`requestForMasking`). A body the
 * gateway looks into is looked into decoded: a compressed one is sent on decompressed (any origin
 * takes a body without Content-Encoding), and one in a coding the gateway cannot undo is refused.
 */
import type { Transform } from "node:stream";
import { endToEndHeaders } from "../http/hop-by-hop.js";
import { decodersFor, requestForMasking } from "./masked-response.js";
import type { SecretBook } from "./secret-book.js";

export type OutgoingRequest =
  | {
      ok: true;
      /** The target, placeholders swapped. */
      path: string;
      rawHeaders: string[];
      /** The secrets whose value the request now carries (for the record). */
      carried: string[];
      /** What the body streams through on its way, in order. */
      body: Transform[];
      /** The body's length is no longer known: send it chunked. */
      rechunk: boolean;
    }
  | { ok: false; reason: string; secret?: string };

export function outgoingRequest(
  book: SecretBook,
  host: string,
  port: number,
  path: string,
  /** End-to-end headers, the client's Host dropped. */
  rawHeaders: readonly string[],
  hasBody: boolean,
): OutgoingRequest {
  const decision = book.decideHead(host, port, path, rawHeaders);
  if (!decision.ok) return { ok: false, reason: decision.reason, secret: decision.secret };
  let headers = decision.rawHeaders;
  if (book.ownSecrets(host, port).length > 0) headers = requestForMasking(headers);
  const body: Transform[] = [];
  let rechunk = false;
  if (hasBody && book.watchesBodies(host, port)) {
    const encodings = headerValues(headers, "content-encoding");
    const decoded = decodersFor(encodings);
    if (!decoded.ok) {
      return {
        ok: false,
        reason: `its body is encoded as "${decoded.coding}", which the gateway cannot check for the run's secrets`,
      };
    }
    if (decoded.decoders.length > 0) {
      body.push(...decoded.decoders);
      headers = endToEndHeaders(headers, ["content-encoding", "content-length"]);
      rechunk = true;
    }
  }
  const streams = book.requestBody(host, port);
  if (streams !== undefined) {
    body.push(...streams.streams);
    // A swapped value changes the body's length: send it chunked rather than with a wrong length.
    if (streams.swaps && hasBody) {
      headers = endToEndHeaders(headers, ["content-length"]);
      rechunk = true;
    }
  }
  return { ok: true, path: decision.target, rawHeaders: headers, carried: decision.used, body, rechunk };
}

/** The codings of a Content-Encoding header list, in the order applied, "identity" left out. */
function headerValues(rawHeaders: readonly string[], name: string): string[] {
  const values: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (rawHeaders[i]?.toLowerCase() !== name) continue;
    for (const token of (rawHeaders[i + 1] ?? "").split(",")) {
      const coding = token.trim().toLowerCase();
      if (coding !== "" && coding !== "identity") values.push(coding);
    }
  }
  return values;
}
