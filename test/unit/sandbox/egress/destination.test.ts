/** The address policy between the allowlist and the connection; no connection is made here. */
import { describe, expect, it } from "vitest";
import { type Lookup, resolveDestination } from "../../../../src/sandbox/egress/policy/destination.js";

const answers =
  (...addresses: string[]): Lookup =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));

describe("resolveDestination", () => {
  it("passes public addresses, in the resolver's order, canonical", async () => {
    const result = await resolveDestination("example.com", {
      allowPrivate: false,
      lookup: answers("93.184.215.14", "2606:2800:21f:CB07:6820:80DA:AF6B:8B2C"),
    });
    expect(result).toEqual({
      ok: true,
      addresses: ["93.184.215.14", "2606:2800:21f:cb07:6820:80da:af6b:8b2c"],
    });
  });

  it("refuses the name when any one answer is private (a hostile record mixing addresses)", async () => {
    const result = await resolveDestination("example.com", {
      allowPrivate: false,
      lookup: answers("93.184.215.14", "10.0.0.7"),
    });
    expect(result).toEqual({
      ok: false,
      refused: true,
      status: 403,
      reason: "example.com resolves to 10.0.0.7, a private address (--allow-private would allow it)",
    });
  });

  it("refuses metadata always: by name or as an IP literal, with or without allowPrivate", async () => {
    const byName = await resolveDestination("example.com", {
      allowPrivate: true,
      lookup: answers("fd00:ec2::254"),
    });
    expect(byName).toMatchObject({ ok: false, refused: true, status: 403 });
    if (!byName.ok)
      expect(byName.reason).toBe(
        "example.com resolves to fd00:ec2::254, a cloud metadata address (always refused, even with --allow-private)",
      );
    const lookup: Lookup = async () => {
      throw new Error("an IP literal or a metadata name is never resolved");
    };
    for (const allowPrivate of [true, false]) {
      expect(await resolveDestination("169.254.169.254", { allowPrivate, lookup })).toEqual({
        ok: false,
        refused: true,
        status: 403,
        reason: "169.254.169.254 is a cloud metadata address (always refused, even with --allow-private)",
      });
      expect(await resolveDestination("Metadata.Google.Internal.", { allowPrivate, lookup })).toMatchObject({
        ok: false,
        status: 403,
        reason:
          "metadata.google.internal is a cloud metadata address (always refused, even with --allow-private)",
      });
    }
  });

  it("reports a name that does not resolve, or resolves to something that is not an address, as 502", async () => {
    const failing: Lookup = async () => {
      throw Object.assign(new Error("getaddrinfo ENOTFOUND"), { code: "ENOTFOUND" });
    };
    for (const lookup of [failing, answers(), answers("127.0.0.1", "evil.test")]) {
      expect(await resolveDestination("example.com", { allowPrivate: true, lookup })).toEqual({
        ok: false,
        refused: false,
        status: 502,
        reason: "name does not resolve",
      });
    }
  });
});
