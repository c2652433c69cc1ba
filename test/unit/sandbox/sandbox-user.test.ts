/**
 * `--user` and `DockerSandbox.open({ user })` take UID[:GID] as decimal numbers and never let uid 0
 * (or the root group) through, however it is spelled (issue 8, finding 2: `--user 00` ran as root).
 */
import { describe, expect, it } from "vitest";
import { loadSandboxConfig } from "../../../src/config.js";
import { ConfigError } from "../../../src/errors.js";
import { parseSandboxUser } from "../../../src/sandbox/sandbox-user.js";

/** Every spelling of root that Docker (or runc, after 32-bit truncation) could run as uid 0. */
const ROOT_UIDS = ["0", "00", "000", "0:0", "000:000", "00:1234", "0:1000", "0000000000:1000"];
/** A gid of 0 is the root group: refused too, with a hint. */
const ROOT_GROUPS = ["1000:0", "1000:00", "1000:0000"];
/** Names, signs, whitespace, other bases, empty or extra parts, non-ASCII digits. */
const MALFORMED = [
  "",
  " ",
  "root",
  "root:root",
  "sandbox",
  "1000:root",
  "root:1000",
  "+1000",
  "-1",
  "1000:-1",
  " 1000",
  "1000 ",
  "1000\n",
  "1000: 1000",
  "0x3e8",
  "0o1750",
  "0b1",
  "1e3",
  "1000.0",
  "1_000",
  ":",
  ":1000",
  "1000:",
  "1000::1000",
  "1000:1000:1000",
  "١٠٠٠",
  "１０００",
];
/** 2^31 and above: runc refuses them, and 2^32 is 0 (root) once truncated to a 32-bit uid_t. */
const OUT_OF_RANGE = [
  "2147483648",
  "4294967294",
  "4294967295",
  "4294967296",
  "4294967296:1000",
  "1000:4294967296",
  "18446744073709551616",
  "99999999999999999999999",
];

describe("parseSandboxUser", () => {
  it("returns the canonical uid:gid, the gid defaulting to the uid", () => {
    expect(parseSandboxUser("1000")).toEqual({ ok: true, user: "1000:1000", uid: 1000, gid: 1000 });
    expect(parseSandboxUser("1000:1234")).toEqual({ ok: true, user: "1000:1234", uid: 1000, gid: 1234 });
    expect(parseSandboxUser("01000:001234")).toMatchObject({ ok: true, user: "1000:1234" });
    expect(parseSandboxUser("1")).toMatchObject({ ok: true, user: "1:1" });
    expect(parseSandboxUser("2147483647")).toMatchObject({ ok: true, user: "2147483647:2147483647" });
    expect(parseSandboxUser("65534:65534")).toMatchObject({ ok: true, user: "65534:65534" });
  });

  it.each(ROOT_UIDS)("refuses uid 0 spelled %j", (spelling) => {
    const parsed = parseSandboxUser(spelling);
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? "" : parsed.reason).toMatch(/uid 0 is root/);
  });

  it.each(ROOT_GROUPS)("refuses the root group spelled %j and says what to pass", (spelling) => {
    const parsed = parseSandboxUser(spelling);
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? "" : parsed.reason).toMatch(/gid 0 is the root group.*1000:1000/);
  });

  it.each(MALFORMED)("refuses %j: only decimal digits, no names", (spelling) => {
    const parsed = parseSandboxUser(spelling);
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? "" : parsed.reason).toMatch(/UID or UID:GID in decimal digits/);
  });

  it.each(OUT_OF_RANGE)("refuses %j: out of range", (spelling) => {
    const parsed = parseSandboxUser(spelling);
    expect(parsed.ok).toBe(false);
    expect(parsed.ok ? "" : parsed.reason).toMatch(/at most 2147483647/);
  });
});

describe("loadSandboxConfig --user", () => {
  const load = (user: string) => loadSandboxConfig({}, { workspace: "/w", user });

  it("carries the canonical uid:gid in the settings", () => {
    expect(load("1000").user).toBe("1000:1000");
    expect(load("01000:02000").user).toBe("1000:2000");
    expect(loadSandboxConfig({}, { workspace: "/w" }).user).toBeUndefined();
  });

  it.each([...ROOT_UIDS, ...ROOT_GROUPS, ...MALFORMED, ...OUT_OF_RANGE])(
    "refuses %j with a ConfigError naming the flag",
    (spelling) => {
      expect(() => load(spelling)).toThrow(ConfigError);
      expect(() => load(spelling)).toThrow(/^--user /);
    },
  );
});
