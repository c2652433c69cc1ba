/**
 * The two request targets the gateway serves, read strictly: `CONNECT host:port` (authority form)
 * and a plain-HTTP absolute URL. Anything else is a request the gateway answers with 400.
 */

export type Target<T> = ({ ok: true } & T) | { ok: false; reason: string };

/** `host:port` or `[v6]:port`; the port is required. The host is returned as given. */
export function parseAuthority(text: string): Target<{ host: string; port: number }> {
  const match = /^(\[[0-9a-fA-F:.]+\]|[^:[\]/@\s]+):([0-9]{1,5})$/.exec(text);
  const port = Number(match?.[2]);
  if (match?.[1] === undefined || !(port >= 1 && port <= 65535)) {
    return { ok: false, reason: "CONNECT needs host:port (e.g. CONNECT example.com:443)" };
  }
  return { ok: true, host: match[1], port };
}

/** A plain-HTTP absolute URL as a proxy receives it: `http://host[:port]/path?query`. */
export function parseAbsoluteUrl(
  text: string,
): Target<{ host: string; port: number; path: string; written: string; hostHeader: string }> {
  if (/^https:\/\//i.test(text)) {
    return { ok: false, reason: "https:// URLs go through CONNECT (set HTTPS_PROXY, not only HTTP_PROXY)" };
  }
  if (!/^http:\/\//i.test(text)) {
    return { ok: false, reason: "this is a proxy: send an absolute http:// URL, or CONNECT host:port" };
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return { ok: false, reason: "not a valid URL" };
  }
  if (url.hostname === "") return { ok: false, reason: "the URL has no host" };
  // The WHATWG parser has already decoded and canonicalized the host (127.1 → 127.0.0.1, IDN →
  // punycode); the decision, the connection and the Host header all use this one reading of it.
  return {
    ok: true,
    host: url.hostname,
    port: url.port === "" ? 80 : Number(url.port),
    path: `${url.pathname}${url.search}`,
    // What the client wrote after the authority: a request rule judges this, not the parser's reading.
    written: text.replace(/^http:\/\/[^/?#\\]*/i, "") || "/",
    hostHeader: url.host,
  };
}
