/**
 * IP literals in every spelling a client or resolver may use, reduced to one canonical form, so that
 * `127.1`, `0x7f.1`, `2130706433` and `::ffff:127.0.0.1` are all recognised as 127.0.0.1 and none of
 * them is ever mistaken for a name and handed to DNS. IPv4 follows the WHATWG URL host parser (the
 * one browsers, curl-like clients and Node's `URL` agree on).
 */
import { isIPv6 } from "node:net";

/** An address in canonical text: dotted-quad IPv4, or RFC 5952 IPv6 (lower-case, `::`-compressed). */
export interface IpLiteral {
  address: string;
  family: 4 | 6;
}

/**
 * The canonical address `text` spells, or undefined when it is not an IP literal. `text` has no
 * brackets. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is the IPv4 address it maps.
 */
export function parseIpLiteral(text: string): IpLiteral | undefined {
  if (text.includes(":")) return parseIpv6(text);
  if (!endsInNumber(text)) return undefined;
  const value = parseIpv4(text);
  return value === undefined ? undefined : { address: ipv4ToText(value), family: 4 };
}

/**
 * WHATWG "ends in a number": a host whose last label is numeric (`example.123`, `1.2.3.0x4`) is an
 * IPv4 address or invalid, never a name.
 */
export function endsInNumber(host: string): boolean {
  const parts = host.split(".");
  if (parts.at(-1) === "" && parts.length > 1) parts.pop();
  const last = parts.at(-1) ?? "";
  if (/^[0-9]+$/.test(last)) return true;
  return last !== "" && parseIpv4Number(last) !== undefined;
}

/** The 8 hextets of a canonical IPv6 address (as `parseIpLiteral` returns it). */
export function ipv6Hextets(address: string): number[] {
  const [head = "", tail] = address.split("::");
  const toNumbers = (part: string): number[] => {
    if (part === "") return [];
    return part.split(":").flatMap((group) => {
      if (!group.includes(".")) return [Number.parseInt(group, 16)];
      const v4 = parseIpv4(group) ?? 0;
      return [v4 >>> 16, v4 & 0xffff];
    });
  };
  const left = toNumbers(head);
  if (tail === undefined) return left;
  const right = toNumbers(tail);
  return [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
}

export function ipv4ToText(value: number): string {
  return [value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff].join(".");
}

function parseIpv6(text: string): IpLiteral | undefined {
  // Zone ids (`fe80::1%eth0`) name a host interface: never a destination a sandbox may pick.
  if (text.includes("%") || !isIPv6(text)) return undefined;
  let canonical: string;
  try {
    canonical = new URL(`http://[${text}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
  const hextets = ipv6Hextets(canonical);
  const mapped = hextets.slice(0, 5).every((h) => h === 0) && hextets[5] === 0xffff;
  if (mapped)
    return { address: ipv4ToText(((hextets[6] ?? 0) * 0x10000 + (hextets[7] ?? 0)) >>> 0), family: 4 };
  return { address: canonical, family: 6 };
}

function parseIpv4(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.at(-1) === "" && parts.length > 1) parts.pop();
  if (parts.length > 4) return undefined;
  const numbers: number[] = [];
  for (const part of parts) {
    const n = parseIpv4Number(part);
    if (n === undefined) return undefined;
    numbers.push(n);
  }
  const last = numbers.pop() ?? 0;
  if (numbers.some((n) => n > 255)) return undefined;
  if (last >= 256 ** (4 - numbers.length)) return undefined;
  return numbers.reduce((sum, n, i) => sum + n * 256 ** (3 - i), last);
}

function parseIpv4Number(part: string): number | undefined {
  if (part === "") return undefined;
  let radix = 10;
  let digits = part;
  if (/^0x/i.test(part)) {
    radix = 16;
    digits = part.slice(2);
  } else if (part.length > 1 && part.startsWith("0")) {
    radix = 8;
    digits = part.slice(1);
  }
  if (digits === "") return 0;
  const pattern = radix === 16 ? /^[0-9a-f]+$/i : radix === 8 ? /^[0-7]+$/ : /^[0-9]+$/;
  if (!pattern.test(digits)) return undefined;
  return Number.parseInt(digits, radix);
}
