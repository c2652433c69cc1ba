/**
 * Adversarial (finding 15): every cloud credential endpoint is metadata, in every spelling of its
 * address, and refused always: as a name resolving there, as an IP literal listed exactly, with or
 * without `--allow-private`. Only the gateway's decision is exercised: no connection is made.
 */
import { describe, expect, it } from "vitest";
import { addressClass } from "../../../../src/sandbox/egress/policy/address-policy.js";
import { type Lookup, resolveDestination } from "../../../../src/sandbox/egress/policy/destination.js";

/** The endpoints, each with what it hands out. */
const ENDPOINTS: ReadonlyArray<[string, string]> = [
  ["169.254.169.254", "AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean instance metadata"],
  ["fd00:ec2::254", "AWS instance metadata over IPv6"],
  ["169.254.170.2", "ECS task credentials"],
  ["169.254.170.23", "EKS Pod Identity"],
  ["fd00:ec2::23", "EKS Pod Identity over IPv6"],
  ["168.63.129.16", "Azure WireServer"],
  ["100.100.100.200", "Alibaba Cloud metadata"],
  ["169.254.169.253", "AWS DNS resolver"],
  ["fd00:ec2::253", "AWS DNS resolver over IPv6"],
  ["169.254.169.123", "AWS time sync"],
  ["169.254.0.23", "Tencent Cloud metadata"],
  ["169.254.42.42", "Scaleway metadata"],
  ["fd20:ce::254", "GCP metadata over IPv6"],
];

/** Other spellings of an IPv4 address: integer forms, IPv4-mapped, NAT64 (well-known and local-use), 6to4. */
function spellings(address: string): string[] {
  if (address.includes(":")) return [address, address.toUpperCase(), `[${address}]`];
  const n = address.split(".").reduce((acc, part) => acc * 256 + Number(part), 0);
  const hex = n.toString(16).padStart(8, "0");
  const [a = "", b = ""] = [hex.slice(0, 4), hex.slice(4)];
  return [
    address,
    String(n),
    `0x${hex}`,
    `0${n.toString(8)}`,
    address
      .split(".")
      .map((p) => `0${Number(p).toString(8)}`)
      .join("."),
    address
      .split(".")
      .map((p) => `0x${Number(p).toString(16)}`)
      .join("."),
    `::ffff:${address}`,
    `::ffff:${a}:${b}`,
    `64:ff9b::${a}:${b}`,
    `64:ff9b::${address}`,
    `64:ff9b:1::${a}:${b}`,
    `2002:${a}:${b}::1`,
    `::${address}`,
  ];
}

describe("adversarial: cloud credential endpoints", () => {
  it.each(ENDPOINTS)("%s (%s) is metadata in every spelling", (address) => {
    const wrong = spellings(address).filter((s) => addressClass(s) !== "metadata");
    expect(wrong).toEqual([]);
  });

  it.each(ENDPOINTS)(
    "%s (%s) is refused by name and as a listed literal, even with --allow-private",
    async (address) => {
      const lookup: Lookup = async () => [{ address, family: address.includes(":") ? 6 : 4 }];
      for (const allowPrivate of [true, false]) {
        const byName = await resolveDestination("creds.example.org", {
          allowPrivate,
          lookup,
        });
        expect(byName).toMatchObject({ ok: false, refused: true, status: 403 });
        if (!byName.ok) expect(byName.reason).toContain("cloud metadata address");
        const literal = address.includes(":") ? `[${address}]` : address;
        const listed = await resolveDestination(literal, { allowPrivate, lookup });
        expect(listed).toMatchObject({ ok: false, refused: true, status: 403 });
        if (!listed.ok) expect(listed.reason).toContain("cloud metadata address");
      }
    },
  );
});
