/**
 * What kind of address a connection would reach. Anything but "public" is the host's own machine,
 * its networks or its cloud, which a sandbox must not reach through an allowed name that happens to
 * resolve there (DNS rebinding, a hostile record) unless `--allow-private` says so.
 */
import { BlockList } from "node:net";
import { ipv4ToText, ipv6Hextets, parseIpLiteral } from "./ip-literal.js";

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

type Ranges = Array<[string, number]>;

// Checked in this order: the first list an address falls in is its class.
const V4: Array<[AddressClass, Ranges]> = [
  // AWS, GCP, Azure, OpenStack; 100.100.100.200 is Alibaba Cloud's.
  [
    "metadata",
    [
      ["169.254.169.254", 32],
      ["100.100.100.200", 32],
    ],
  ],
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
  ["metadata", [["fd00:ec2::254", 128]]],
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
  const inner = embeddedIpv4(ip.address);
  // Only the exact metadata address outranks what is inside; the rest is judged by its IPv4.
  if (inner !== undefined && classOf(ip.address, "ipv6") !== "metadata") return classOf(inner, "ipv4");
  return classOf(ip.address, "ipv6");
}

function classOf(address: string, family: "ipv4" | "ipv6"): AddressClass {
  for (const kind of ORDER) if (LISTS.get(kind)?.check(address, family)) return kind;
  return "public";
}

/**
 * The IPv4 address an IPv6 one carries and reaches: NAT64 (64:ff9b::/96) and 6to4 (2002::/16).
 * (IPv4-mapped addresses are already IPv4 after `parseIpLiteral`.)
 */
function embeddedIpv4(address: string): string | undefined {
  const [h0 = 0, h1 = 0, h2 = 0, h3 = 0, h4 = 0, h5 = 0, h6 = 0, h7 = 0] = ipv6Hextets(address);
  if (h0 === 0x64 && h1 === 0xff9b && h2 === 0 && h3 === 0 && h4 === 0 && h5 === 0) {
    return ipv4ToText((h6 * 0x10000 + h7) >>> 0);
  }
  if (h0 === 0x2002) return ipv4ToText((h1 * 0x10000 + h2) >>> 0);
  return undefined;
}
