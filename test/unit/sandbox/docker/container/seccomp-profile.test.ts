/**
 * The sandbox's seccomp profile is Docker's default for Engine 20.10, byte for byte from moby, plus
 * the set-id rules, and nothing else changed: never less strict than the default.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { containerCreateOptions } from "../../../../../src/sandbox/docker/container/container-spec.js";
import {
  buildSandboxSeccompProfile,
  SANDBOX_SECCOMP_PROFILE,
  type SeccompProfile,
  type SeccompRule,
} from "../../../../../src/sandbox/docker/container/seccomp-profile.js";
import { SANDBOX_DEFAULTS } from "../../../../../src/sandbox/sandbox-request.js";

const dataFile = fileURLToPath(
  new URL("../../../../../src/sandbox/docker/container/docker-default-seccomp.json", import.meta.url),
);
const dockerDefault = JSON.parse(readFileSync(dataFile, "utf8")) as SeccompProfile;

const GUARDED = ["chmod", "fchmod", "fchmodat", "creat", "mknod", "mknodat", "open", "openat"];
const REMOVED = [...GUARDED, "openat2", "io_uring_setup", "io_uring_enter", "io_uring_register"];

const unconditional = (rule: SeccompRule) =>
  rule.action === "SCMP_ACT_ALLOW" && (rule.args ?? []).length === 0;

describe("sandbox seccomp profile", () => {
  it("keeps moby v20.10.24's profiles/seccomp/default.json unchanged", () => {
    const sha = createHash("sha256").update(readFileSync(dataFile)).digest("hex");
    expect(sha).toBe("ce3585b856aa4a193671fd8280d0d0612a998bd3f10bdb2f8530dfa958c6197f");
  });

  it("differs from the default only by the set-id rules", () => {
    const built = buildSandboxSeccompProfile();
    expect(built.defaultAction).toBe(dockerDefault.defaultAction);
    expect(built.archMap).toEqual(dockerDefault.archMap);
    const [first, ...rest] = dockerDefault.syscalls;
    // The big allow list loses exactly the guarded names; every other default rule is as it was.
    expect(built.syscalls[0]?.names).toEqual(first?.names.filter((name) => !REMOVED.includes(name)));
    expect(first?.names).toEqual(expect.arrayContaining(REMOVED));
    expect(built.syscalls.slice(1, rest.length + 1)).toEqual(rest);
    const added = built.syscalls.slice(rest.length + 1);
    expect(added.flatMap((rule) => rule.names).sort()).toEqual(
      [...GUARDED, "open", "openat", "openat2"].sort(),
    );
    // Nothing the default refuses is allowed: every added allow is for a syscall it allowed outright.
    for (const rule of added.filter((r) => r.action === "SCMP_ACT_ALLOW")) {
      expect(rule.args?.length, rule.names[0]).toBeGreaterThan(0);
      expect(first?.names).toContain(rule.names[0]);
    }
  });

  it("lets no unconditional allow of a guarded syscall through (libseccomp would let it win)", () => {
    const built = buildSandboxSeccompProfile();
    const allowedOutright = built.syscalls.filter(unconditional).flatMap((rule) => rule.names);
    for (const name of REMOVED) expect(allowedOutright, name).not.toContain(name);
  });

  it("allows a mode only without S_ISUID/S_ISGID, masked, and open without O_CREAT/O_TMPFILE", () => {
    const rules = buildSandboxSeccompProfile().syscalls;
    const conditions = (name: string) =>
      rules.filter((r) => r.names.includes(name) && r.action === "SCMP_ACT_ALLOW").map((r) => r.args);
    const mode = (index: number) => [{ index, value: 0o6000, valueTwo: 0, op: "SCMP_CMP_MASKED_EQ" }];
    expect(conditions("chmod")).toEqual([mode(1)]);
    expect(conditions("fchmod")).toEqual([mode(1)]);
    expect(conditions("fchmodat")).toEqual([mode(2)]);
    expect(conditions("creat")).toEqual([mode(1)]);
    expect(conditions("mknod")).toEqual([mode(1)]);
    expect(conditions("mknodat")).toEqual([mode(2)]);
    const notCreating = (index: number) => [
      { index, value: 0o100 | 0o20000000, valueTwo: 0, op: "SCMP_CMP_MASKED_EQ" },
    ];
    expect(conditions("open")).toEqual([mode(2), notCreating(1)]);
    expect(conditions("openat")).toEqual([mode(3), notCreating(2)]);
    const openat2 = rules.filter((r) => r.names.includes("openat2"));
    expect(openat2).toMatchObject([{ action: "SCMP_ACT_ERRNO", errnoRet: 38 }]);
    expect(rules.some((r) => r.names.some((name) => name.startsWith("io_uring")))).toBe(false);
  });

  it("is part of every container's create options, as the Engine API takes it: the JSON itself", () => {
    const options = containerCreateOptions({
      image: "i",
      workspace: "/w",
      ...SANDBOX_DEFAULTS,
      user: "1000:1000",
    });
    expect(options.HostConfig?.SecurityOpt).toEqual([
      "no-new-privileges:true",
      `seccomp=${SANDBOX_SECCOMP_PROFILE}`,
    ]);
    expect(JSON.parse(SANDBOX_SECCOMP_PROFILE)).toEqual(buildSandboxSeccompProfile());
  });
});
