/**
 * What kind of address a connection would reach. Anything but "public" is the host's own machine,
 * its networks or its cloud, which a sandbox must not reach through an allowed name that happens to
 * resolve there (DNS rebinding, a hostile record) unless `--allow-private` says so.
 */
import { BlockList } from "node:net";
import { ipv4ToText, ipv6Hextets, parseIpLiteral } from "./ip-literal.js";
import { METADATA_V4, METADATA_V6 } from "./metadata.js";

export type AddressClass = "public" | "loopback" | "private" | "link-local" | "metadata" | "reserved";

/** In words, for refusal reasons: "a loopback address". */
export const ADDRESS_CLASS_WORDS: Readonly<Record<AddressClass, string>> = Object.freeze({
  public: "a public address",
  loopback: "a loopback address",
  private: "a private address",
  "link-local": "a link-local address",
  metadata: "a cloud metadata address",
  reserved: "a reserved address",
});

type Ranges = ReadonlyArray<readonly [string, number]>;

// Checked in this order: the first list an address falls in is its class.
const V4: Array<[AddressClass, Ranges]> = [
  ["metadata", METADATA_V4],
  ["loopback", [["127.0.0.0", 8]]],
  ["link-local", [["169.254.0.0", 16]]],
  [
    "private",
    [
      ["10.0.0.0", 8],
      ["172.16.0.0", 12],
      ["192.168.0.0", 16],
      ["100.64.0.0", 10],
    ],
  ],
  [
    "reserved",
    [
      // 0.0.0.0 reaches the host's own services on Linux.
      ["0.0.0.0", 8],
      ["192.0.0.0", 24],
      ["198.18.0.0", 15],
      ["224.0.0.0", 4],
      // Includes the broadcast address 255.255.255.255.
      ["240.0.0.0", 4],
    ],
  ],
];

const V6: Array<[AddressClass, Ranges]> = [
  ["metadata", METADATA_V6],
  ["loopback", [["::1", 128]]],
  ["link-local", [["fe80::", 10]]],
  [
    "private",
    [
      ["fc00::", 7],
      // Deprecated site-local, still routed inside some networks.
      ["fec0::", 10],
      // Local-use NAT64 (RFC 8215): translated by the site's own gateway.
      ["64:ff9b:1::", 48],
    ],
  ],
  [
    "reserved",
    [
      // The unspecified address, and the deprecated IPv4-compatible range around it.
      ["::", 96],
      ["ff00::", 8],
      ["100::", 64],
    ],
  ],
];

const LISTS = new Map<AddressClass, BlockList>();
for (const [family, table] of [
  ["ipv4", V4],
  ["ipv6", V6],
] as const) {
  for (const [kind, ranges] of table) {
    const list = LISTS.get(kind) ?? new BlockList();
    for (const [network, prefix] of ranges) list.addSubnet(network, prefix, family);
    LISTS.set(kind, list);
  }
}
const ORDER: readonly AddressClass[] = ["metadata", "loopback", "link-local", "private", "reserved"];

/** The class of an IP address in any spelling; anything that is not an address is "reserved". */
export function addressClass(address: string): AddressClass {
  const ip = parseIpLiteral(address.replace(/^\[(.*)\]$/, "$1"));
  if (ip === undefined) return "reserved";
  if (ip.family === 4) return classOf(ip.address, "ipv4");
  const own = classOf(ip.address, "ipv6");
  if (own === "metadata") return own;
  // An IPv4 address some translator may reach from this one: metadata inside any of them wins.
  const carried = carriedIpv4(ip.address);
  if (carried.some((inner) => classOf(inner, "ipv4") === "metadata")) return "metadata";
  // The well-known NAT64 prefix and 6to4 reach their IPv4 address: judged by it.
  const reached = reachedIpv4(ip.address);
  return reached === undefined ? own : classOf(reached, "ipv4");
}

function classOf(address: string, family: "ipv4" | "ipv6"): AddressClass {
  for (const kind of ORDER) if (LISTS.get(kind)?.check(address, family)) return kind;
  return "public";
}

/**
 * The IPv4 address an IPv6 one carries and reaches: NAT64 (64:ff9b::/96) and 6to4 (2002::/16).
 * (IPv4-mapped addresses are already IPv4 after `parseIpLiteral`.)
 */
function reachedIpv4(address: string): string | undefined {
  const h = ipv6Hextets(address);
  if (h[0] === 0x64 && h[1] === 0xff9b && h.slice(2, 6).every((x) => x === 0)) return ipv4At(h, 96);
  if (h[0] === 0x2002) return ipv4At(h, 16);
  return undefined;
}

/**
 * Every IPv4 address a translator could take this IPv6 one to: besides `reachedIpv4`, the
 * local-use NAT64 prefix 64:ff9b:1::/48 with any RFC 6052 prefix length inside it (/48, /56, /64,
 * /96), IPv4-compatible (::/96) and IPv4-translated (::ffff:0:0/96) addresses, and Teredo's server
 * and (obfuscated) client.
 */
function carriedIpv4(address: string): string[] {
  const h = ipv6Hextets(address);
  const found: string[] = [];
  const reached = reachedIpv4(address);
  if (reached !== undefined) found.push(reached);
  if (h[0] === 0x64 && h[1] === 0xff9b && h[2] === 1) {
    found.push(ipv4At(h, 48, 72), ipv4At(h, 56, 72), ipv4At(h, 72), ipv4At(h, 96));
  }
  if (h.slice(0, 6).every((x) => x === 0)) found.push(ipv4At(h, 96));
  if (h.slice(0, 4).every((x) => x === 0) && h[4] === 0xffff && h[5] === 0) found.push(ipv4At(h, 96));
  if (h[0] === 0x2001 && h[1] === 0) {
    found.push(ipv4At(h, 32), ipv4ToText(~(((h[6] ?? 0) << 16) | (h[7] ?? 0)) >>> 0));
  }
  return found;
}

/**
 * The 32 bits of `hextets` from bit `at` (RFC 6052: bits 64–71 are always zero, so an address that
 * would straddle them resumes at `resume`).
 */
function ipv4At(hextets: readonly number[], at: number, resume = at): string {
  const bit = (i: number): number => ((hextets[Math.floor(i / 16)] ?? 0) >> (15 - (i % 16))) & 1;
  let value = 0;
  let position = at;
  for (let taken = 0; taken < 32; taken += 1) {
    if (position === 64 && resume !== at) position = resume;
    value = value * 2 + bit(position);
    position += 1;
  }
  return ipv4ToText(value >>> 0);
}
