/**
 * What a host string (an allow entry's, or one a sandbox client sent) is: an IP literal, a DNS name,
 * or nothing acceptable. Every byte of a client's host is hostile: anything that is not plainly a
 * name or an address is refused here, before the allowlist or DNS sees it.
 */
import { endsInNumber, type IpLiteral, parseIpLiteral } from "./ip-literal.js";

export type HostSyntax =
  | { kind: "ip"; ip: IpLiteral }
  | { kind: "name"; name: string }
  | { kind: "invalid"; reason: string };

const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

/**
 * Classifies `raw`: lower-cased, one trailing dot and IPv6 brackets removed. A name that ends in a
 * number (`example.123`) is read as IPv4 or refused, never left to DNS.
 */
export function hostSyntax(raw: string): HostSyntax {
  let host = raw.toLowerCase();
  if (host.startsWith("[") && host.endsWith("]")) {
    const inner = host.slice(1, -1);
    const ip = inner.includes(":") ? parseIpLiteral(inner) : undefined;
    if (ip !== undefined) return { kind: "ip", ip };
    return { kind: "invalid", reason: `"${shown(raw)}" is not a valid IPv6 address` };
  }
  if (host.includes(":")) {
    const ip = parseIpLiteral(host);
    return ip === undefined
      ? { kind: "invalid", reason: `"${shown(raw)}" is not a valid IPv6 address` }
      : { kind: "ip", ip };
  }
  if (endsInNumber(host)) {
    const ip = parseIpLiteral(host);
    return ip === undefined
      ? { kind: "invalid", reason: `"${shown(raw)}" is not a valid IP address` }
      : { kind: "ip", ip };
  }
  if (host.endsWith(".")) host = host.slice(0, -1);
  if (host === "" || host.length > 253 || !host.split(".").every((label) => LABEL.test(label))) {
    return { kind: "invalid", reason: `"${shown(raw)}" is not a valid host name` };
  }
  return { kind: "name", name: host };
}

/** A host as `--allow-host` takes it: IPv6 in brackets. */
export function hostForFlag(host: string): string {
  return host.includes(":") ? `[${host}]` : host;
}

/**
 * A client-supplied string made safe to put in a message or record: at most 200 characters, no
 * control or non-ASCII characters (they would reach terminals and the model).
 */
export function shown(raw: string): string {
  const clean = raw.replace(/[^\x20-\x7e]/g, "?");
  return clean.length > 200 ? `${clean.slice(0, 200)}…` : clean;
}
