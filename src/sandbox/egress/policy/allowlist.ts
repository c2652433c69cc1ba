/**
 * The allowlist: which names, IP literals and ports the sandbox may reach. Decisions are on the host
 * as the client gave it, before any DNS, so a name that is not allowed is never even resolved.
 * The reasons reach the model and the user verbatim: each names the flag that would allow the request.
 */
import { hostForFlag, hostSyntax } from "./host-syntax.js";

/** One `--allow-host` entry, normalized. */
export interface AllowEntry {
  /** "example.com", "*.example.org" or an IP literal (canonical), lower-case, no brackets. */
  host: string;
  /** True for "*.suffix": any name under the suffix, not the suffix itself. */
  wildcard: boolean;
  /** True when `host` is an IP literal: it matches that address only, in any spelling. */
  isIp: boolean;
  /** Ports allowed; without a port in the entry, 443 and 80. */
  ports: readonly number[];
  /** As shown to people and accepted back by `parseAllowEntry`: "example.com:443,80". */
  text: string;
}

/** Ports an entry without one allows: HTTPS and plain HTTP. */
const DEFAULT_PORTS: readonly number[] = Object.freeze([443, 80]);

export type AllowDecision = { allowed: true; entry: AllowEntry } | { allowed: false; reason: string };

/**
 * Parses one entry: `example.com`, `EXAMPLE.com.`, `*.example.org`, `host:8443`, `host:443,80`,
 * `203.0.113.7`, `203.0.113.7:8080`, `[2001:db8::1]:443`, `2001:db8::1` (bare IPv6: no port).
 */
export function parseAllowEntry(
  text: string,
): { ok: true; entry: AllowEntry } | { ok: false; reason: string } {
  const raw = text.trim();
  if (raw === "") return { ok: false, reason: "empty allow entry" };
  if (/[/@?#]/.test(raw) || raw.includes("://")) {
    return {
      ok: false,
      reason: `give a host name, not a URL: "${raw}" (e.g. example.com or example.com:8443)`,
    };
  }
  const split = splitPorts(raw);
  if (!split.ok) return split;
  const { hostText, ports } = split;

  let wildcard = false;
  let bare = hostText;
  if (hostText === "*" || hostText === "*.") {
    return { ok: false, reason: `"${raw}" would allow every host: name the hosts (e.g. *.example.org)` };
  }
  if (hostText.startsWith("*.")) {
    wildcard = true;
    bare = hostText.slice(2);
  }
  if (bare.includes("*")) {
    return { ok: false, reason: `"${raw}": a wildcard may only be the whole first label (*.example.org)` };
  }
  const syntax = hostSyntax(bare);
  if (syntax.kind === "invalid") return { ok: false, reason: `bad allow entry: ${syntax.reason}` };
  if (syntax.kind === "ip") {
    if (wildcard) return { ok: false, reason: `"${raw}": a wildcard needs a domain name, not an address` };
    const host = syntax.ip.address;
    return { ok: true, entry: { host, wildcard, isIp: true, ports, text: entryText(host, ports) } };
  }
  if (wildcard && !syntax.name.includes(".")) {
    return {
      ok: false,
      reason: `"${raw}" would allow a whole top-level domain: give at least two labels (*.example.org)`,
    };
  }
  const host = wildcard ? `*.${syntax.name}` : syntax.name;
  return { ok: true, entry: { host, wildcard, isIp: false, ports, text: entryText(host, ports) } };
}

/** The allow entries in force, and the decision on each request's host and port. */
export class Allowlist {
  readonly entries: readonly AllowEntry[];

  constructor(entries: readonly AllowEntry[]) {
    this.entries = Object.freeze([...entries]);
  }

  /** The decision on a name+port as the client gave it, before DNS. */
  check(host: string, port: number): AllowDecision {
    const syntax = hostSyntax(host);
    if (syntax.kind === "invalid") return { allowed: false, reason: syntax.reason };
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      return { allowed: false, reason: `port ${port} is not a valid port` };
    }
    if (syntax.kind === "ip") {
      const address = syntax.ip.address;
      const matching = this.entries.filter((e) => e.isIp && e.host === address);
      if (matching.length === 0) {
        return {
          allowed: false,
          reason: `IP addresses are refused unless listed exactly (--allow-host ${hostForFlag(address)}:${port})`,
        };
      }
      return pickPort(matching, hostForFlag(address), port);
    }
    const name = syntax.name;
    const matching = this.entries.filter(
      (e) => !e.isIp && (e.wildcard ? name.endsWith(e.host.slice(1)) : e.host === name),
    );
    if (matching.length === 0) {
      const flag = DEFAULT_PORTS.includes(port) ? name : `${name}:${port}`;
      return { allowed: false, reason: `not on the allowlist (--allow-host ${flag} would allow it)` };
    }
    return pickPort(matching, name, port);
  }
}

function pickPort(matching: readonly AllowEntry[], shownHost: string, port: number): AllowDecision {
  const entry = matching.find((e) => e.ports.includes(port));
  if (entry !== undefined) return { allowed: true, entry };
  const allowed = [...new Set(matching.flatMap((e) => e.ports))].join(", ");
  return {
    allowed: false,
    reason: `port ${port} is not allowed for ${shownHost} (allowed: ${allowed}; --allow-host ${shownHost}:${port} would allow it)`,
  };
}

type SplitResult = { ok: true; hostText: string; ports: readonly number[] } | { ok: false; reason: string };

function splitPorts(raw: string): SplitResult {
  let hostText = raw;
  let portText: string | undefined;
  if (raw.startsWith("[")) {
    const close = raw.indexOf("]");
    if (close < 0) return { ok: false, reason: `"${raw}": missing "]" after the IPv6 address` };
    hostText = raw.slice(0, close + 1);
    const rest = raw.slice(close + 1);
    if (rest !== "" && !rest.startsWith(":"))
      return { ok: false, reason: `"${raw}": expected ":port" after "]"` };
    if (rest !== "") portText = rest.slice(1);
  } else if (raw.split(":").length === 2) {
    [hostText = "", portText] = raw.split(":");
  }
  if (portText === undefined) return { ok: true, hostText, ports: DEFAULT_PORTS };
  const ports: number[] = [];
  for (const part of portText.split(",")) {
    const port = /^[0-9]{1,5}$/.test(part) ? Number(part) : Number.NaN;
    if (!(port >= 1 && port <= 65535)) {
      return { ok: false, reason: `"${raw}": port "${part}" is not a number from 1 to 65535` };
    }
    if (!ports.includes(port)) ports.push(port);
  }
  return { ok: true, hostText, ports: Object.freeze(ports) };
}

function entryText(host: string, ports: readonly number[]): string {
  return `${hostForFlag(host)}:${ports.join(",")}`;
}
