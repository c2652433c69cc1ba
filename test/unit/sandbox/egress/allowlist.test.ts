import { describe, expect, it } from "vitest";
import {
  type AllowEntry,
  Allowlist,
  parseAllowEntry,
} from "../../../../src/sandbox/egress/policy/allowlist.js";

function entry(text: string): AllowEntry {
  const parsed = parseAllowEntry(text);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.entry;
}

describe("parseAllowEntry", () => {
  it.each([
    [
      "example.com",
      { host: "example.com", wildcard: false, isIp: false, ports: [443, 80], text: "example.com:443,80" },
    ],
    ["EXAMPLE.com.", { host: "example.com", ports: [443, 80], text: "example.com:443,80" }],
    ["*.example.org", { host: "*.example.org", wildcard: true, isIp: false, text: "*.example.org:443,80" }],
    ["example.com:8443", { host: "example.com", ports: [8443], text: "example.com:8443" }],
    ["example.com:443,80", { host: "example.com", ports: [443, 80], text: "example.com:443,80" }],
    ["203.0.113.7", { host: "203.0.113.7", isIp: true, ports: [443, 80], text: "203.0.113.7:443,80" }],
    ["203.0.113.7:8080", { host: "203.0.113.7", isIp: true, ports: [8080], text: "203.0.113.7:8080" }],
    ["[2001:db8::1]:443", { host: "2001:db8::1", isIp: true, ports: [443], text: "[2001:db8::1]:443" }],
    ["2001:DB8:0::1", { host: "2001:db8::1", isIp: true, ports: [443, 80], text: "[2001:db8::1]:443,80" }],
    ["0x7f.1:8080", { host: "127.0.0.1", isIp: true, ports: [8080] }],
    ["[::ffff:127.0.0.1]:80", { host: "127.0.0.1", isIp: true, ports: [80] }],
    ["  registry.example.com  ", { host: "registry.example.com" }],
  ])("accepts %j", (text, expected) => {
    const parsed = parseAllowEntry(text);
    expect(parsed).toMatchObject({ ok: true, entry: expected });
  });

  it("gives back text that parses to the same entry (a transcript's allowlist can be replayed)", () => {
    for (const text of ["example.com", "*.example.org:8443", "[2001:db8::1]:443", "203.0.113.7:80,8080"]) {
      const first = entry(text);
      expect(entry(first.text)).toEqual(first);
    }
  });

  it.each([
    ["", /empty/],
    ["*", /every host/],
    ["*.", /every host/],
    ["*.com", /top-level domain/],
    ["*.*.example.com", /first label/],
    ["a.*.example.com", /first label/],
    ["ex*ample.com", /first label/],
    ["https://example.com", /give a host name, not a URL/],
    ["example.com/simple", /give a host name, not a URL/],
    ["user@example.com", /give a host name, not a URL/],
    ["example.com:0", /1 to 65535/],
    ["example.com:65536", /1 to 65535/],
    ["example.com:", /1 to 65535/],
    ["example.com:https", /1 to 65535/],
    ["exa mple.com", /not a valid host name/],
    ["-bad.example.com", /not a valid host name/],
    ["bad..example.com", /not a valid host name/],
    ["ex\u00e4mple.com", /not a valid host name/],
    ["example.123", /not a valid IP address/],
    ["1.2.3.4.5", /not a valid IP address/],
    ["256.1.1.1", /not a valid IP address/],
    ["*.127.0.0.1", /wildcard needs a domain name/],
    ["[example.com]:443", /not a valid IPv6 address/],
    ["[2001:db8::1", /missing "\]"/],
    ["fe80::1%eth0", /not a valid IPv6 address/],
  ])("refuses %j", (text, reason) => {
    const parsed = parseAllowEntry(text);
    expect(parsed.ok).toBe(false);
    if (!parsed.ok) expect(parsed.reason).toMatch(reason);
  });
});

describe("Allowlist.check", () => {
  const list = new Allowlist(
    ["example.com", "*.example.org", "example.net:8443", "127.0.0.1:8080", "[2001:db8::1]:443"].map(entry),
  );

  it.each([
    ["example.com", 443, "example.com:443,80"],
    ["Example.COM.", 80, "example.com:443,80"],
    ["api.example.org", 443, "*.example.org:443,80"],
    ["a.b.example.org", 80, "*.example.org:443,80"],
    ["example.net", 8443, "example.net:8443"],
    // One address, every spelling of it.
    ["127.0.0.1", 8080, "127.0.0.1:8080"],
    ["127.1", 8080, "127.0.0.1:8080"],
    ["0x7f.1", 8080, "127.0.0.1:8080"],
    ["0177.0.0.1", 8080, "127.0.0.1:8080"],
    ["2130706433", 8080, "127.0.0.1:8080"],
    ["::ffff:127.0.0.1", 8080, "127.0.0.1:8080"],
    ["[::ffff:7f00:1]", 8080, "127.0.0.1:8080"],
    ["[2001:db8:0:0::1]", 443, "[2001:db8::1]:443"],
  ])("allows %s port %i (entry %s)", (host, port, text) => {
    expect(list.check(host, port)).toMatchObject({ allowed: true, entry: { text } });
  });

  it.each([
    ["example.org", 443, "not on the allowlist (--allow-host example.org would allow it)"],
    ["notexample.org", 443, "not on the allowlist (--allow-host notexample.org would allow it)"],
    [
      "example.com.evil.test",
      443,
      "not on the allowlist (--allow-host example.com.evil.test would allow it)",
    ],
    ["evil.test", 8443, "not on the allowlist (--allow-host evil.test:8443 would allow it)"],
    [
      "example.com",
      22,
      "port 22 is not allowed for example.com (allowed: 443, 80; --allow-host example.com:22 would allow it)",
    ],
    [
      "example.net",
      443,
      "port 443 is not allowed for example.net (allowed: 8443; --allow-host example.net:443 would allow it)",
    ],
    [
      "0x7f.0.0.1",
      80,
      "port 80 is not allowed for 127.0.0.1 (allowed: 8080; --allow-host 127.0.0.1:80 would allow it)",
    ],
    ["10.0.0.1", 443, "IP addresses are refused unless listed exactly (--allow-host 10.0.0.1:443)"],
    ["127.0.0.2", 8080, "IP addresses are refused unless listed exactly (--allow-host 127.0.0.2:8080)"],
    ["167772161", 443, "IP addresses are refused unless listed exactly (--allow-host 10.0.0.1:443)"],
    ["[::1]", 443, "IP addresses are refused unless listed exactly (--allow-host [::1]:443)"],
    ["example.123", 443, '"example.123" is not a valid IP address'],
    ["1.2.3.4.5", 443, '"1.2.3.4.5" is not a valid IP address'],
    ["exa mple.com", 443, '"exa mple.com" is not a valid host name'],
    ["example.com", 0, "port 0 is not a valid port"],
  ])("refuses %s port %i", (host, port, reason) => {
    expect(list.check(host, port)).toEqual({ allowed: false, reason });
  });

  it("lets a second entry for the same name add ports", () => {
    const both = new Allowlist([entry("example.com"), entry("example.com:8443")]);
    expect(both.check("example.com", 8443)).toMatchObject({
      allowed: true,
      entry: { text: "example.com:8443" },
    });
    expect(both.check("example.com", 22)).toEqual({
      allowed: false,
      reason:
        "port 22 is not allowed for example.com (allowed: 443, 80, 8443; --allow-host example.com:22 would allow it)",
    });
  });
});
