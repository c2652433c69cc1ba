/**
 * Headers that describe one hop of a proxied request, not the request itself (RFC 9110 §7.6.1):
 * they are dropped between the sandbox and the origin, both ways. Proxy-Authorization in particular
 * must never reach an origin.
 */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/**
 * `rawHeaders` (Node's flat `[name, value, name, value…]`) without hop-by-hop headers, those the
 * Connection header lists, and `alsoDrop` (lower-case names). Returned flat, in order, names as sent.
 */
export function endToEndHeaders(rawHeaders: readonly string[], alsoDrop: readonly string[] = []): string[] {
  const drop = new Set([...HOP_BY_HOP, ...alsoDrop]);
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    if (rawHeaders[i]?.toLowerCase() !== "connection") continue;
    for (const token of (rawHeaders[i + 1] ?? "").split(",")) drop.add(token.trim().toLowerCase());
  }
  const kept: string[] = [];
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] ?? "";
    if (!drop.has(name.toLowerCase())) kept.push(name, rawHeaders[i + 1] ?? "");
  }
  return kept;
}
