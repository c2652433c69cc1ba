import { describe, expect, it } from "vitest";
import { doctorExitCode, formatCheck } from "../../../src/cli/doctor-command.js";
import { type EngineFacts, engineChecks } from "../../../src/sandbox/docker/engine-doctor.js";
import { diskCheck } from "../../../src/sandbox/doctor-check.js";

function facts(over: Partial<EngineFacts> = {}, info: EngineFacts["info"] = {}): EngineFacts {
  return {
    endpoint: "unix:///var/run/docker.sock",
    source: "the default socket",
    remote: false,
    version: "27.0.1",
    apiVersion: "1.46",
    image: "harness-sandbox:abc",
    imagePresent: true,
    baseImage: "debian:bookworm-slim",
    baseImagePresent: true,
    imageHasPython: true,
    ...over,
    info: {
      OSType: "linux",
      OperatingSystem: "Debian GNU/Linux 12",
      CgroupVersion: "2",
      CgroupDriver: "systemd",
      Driver: "overlay2",
      SecurityOptions: ["name=seccomp,profile=builtin", "name=apparmor", "name=cgroupns"],
      Runtimes: { runc: { path: "runc" } },
      ...info,
    },
  };
}

const byName = (checks: ReturnType<typeof engineChecks>, name: string) => checks.find((c) => c.name === name);

describe("harness doctor decisions", () => {
  it("a plain local engine is all ok, one line per check", () => {
    const checks = engineChecks(facts(), { network: "none" });
    expect(checks.map((c) => c.status)).toEqual(checks.map(() => "ok"));
    expect(checks.map((c) => c.name)).toEqual([
      "engine",
      "cgroup",
      "rootless",
      "storage driver",
      "seccomp",
      "AppArmor/SELinux",
      "user namespaces",
      "runtimes",
      "image",
      "allowlist mode",
    ]);
    expect(byName(checks, "engine")?.detail).toContain("version 27.0.1, API 1.46");
    expect(byName(checks, "AppArmor/SELinux")?.detail).toBe("apparmor");
    expect(byName(checks, "rootless")?.detail).toMatch(/^no/);
  });

  it("reads rootless, user namespaces and SELinux from SecurityOptions", () => {
    const checks = engineChecks(
      facts(
        {},
        { SecurityOptions: ["name=seccomp,profile=default", "name=rootless", "name=selinux", "name=userns"] },
      ),
      { network: "none" },
    );
    expect(byName(checks, "rootless")?.detail).toMatch(/^yes/);
    expect(byName(checks, "user namespaces")?.detail).toMatch(/^remapped/);
    expect(byName(checks, "AppArmor/SELinux")?.detail).toBe("selinux");
  });

  it("fails rootless Podman that cannot limit the sandbox, with the line `exec` refuses with", () => {
    const podmanHost = (cgroupControllers: string[]) => ({
      host: { security: { rootless: true }, cgroupControllers, cgroupVersion: "v1" },
    });
    const v1 = engineChecks(facts({ podmanHost: podmanHost([]) }, { CgroupVersion: "1" }), {
      network: "none",
    });
    expect(byName(v1, "limits")).toEqual({
      name: "limits",
      status: "fail",
      detail:
        "rootless Podman here cannot apply the sandbox's memory, pids, cpu limits (cgroup v1, delegated controllers: none)",
      fix: "use cgroup v2 with controller delegation, or rootful Podman",
    });
    expect(doctorExitCode(v1)).toBe(1);
    expect(byName(v1, "rootless")?.detail).toMatch(/^yes/);
    expect(byName(v1, "user namespaces")?.detail).toMatch(/^remapped/);
    const delegated = engineChecks(facts({ podmanHost: podmanHost(["cpu", "memory", "pids"]) }), {
      network: "none",
    });
    expect(byName(delegated, "limits")).toBeUndefined();
    expect(doctorExitCode(delegated)).toBe(0);
  });

  it("fails a --runtime the engine lacks, and one runsc registered without --network=none", () => {
    const missing = engineChecks(facts(), { runtime: "runsc", network: "none" });
    expect(byName(missing, "runtime runsc")).toMatchObject({ status: "fail" });
    expect(doctorExitCode(missing)).toBe(1);
    const plain = facts({}, { Runtimes: { runc: { path: "runc" }, runsc: { path: "/usr/bin/runsc" } } });
    const asked = byName(engineChecks(plain, { runtime: "runsc", network: "none" }), "runtime runsc");
    expect(asked?.status).toBe("fail");
    expect(asked?.detail).toContain('"runtimeArgs":["--network=none"]');
    // Not asked for: a warning that says how to fix it, and harness can still run.
    const unasked = engineChecks(plain, { network: "none" });
    expect(byName(unasked, "runtime runsc")).toMatchObject({ status: "warn" });
    expect(byName(unasked, "runtime runsc")?.fix).toContain("kill -HUP");
    expect(doctorExitCode(unasked)).toBe(0);
  });

  it("warns, not fails, for an image still to build, and says how to build it offline", () => {
    const build = byName(
      engineChecks(facts({ imagePresent: false, imageHasPython: undefined }), { network: "none" }),
      "image",
    );
    expect(build).toMatchObject({ status: "warn" });
    expect(build?.fix).toContain("harness image");
    const offline = byName(
      engineChecks(facts({ imagePresent: false, baseImagePresent: false, imageHasPython: undefined }), {
        network: "none",
      }),
      "image",
    );
    expect(offline?.fix).toContain("npm run base-image");
    const noPython = engineChecks(facts({ imageHasPython: false }), { network: "none" });
    expect(byName(noPython, "allowlist mode")).toMatchObject({ status: "warn" });
  });

  it("fails an engine with Windows containers, and weighs free disk", () => {
    expect(
      byName(engineChecks(facts({}, { OSType: "windows" }), { network: "none" }), "engine")?.status,
    ).toBe("fail");
    expect(diskCheck("state dir disk", "/s", 50 * 1024 ** 2)).toMatchObject({
      status: "fail",
      detail: "50 MiB free at /s",
    });
    expect(diskCheck("state dir disk", "/s", 1024 ** 3).status).toBe("warn");
    expect(diskCheck("state dir disk", "/s", 10 * 1024 ** 3)).toMatchObject({
      status: "ok",
      detail: "10 GiB free at /s",
    });
  });

  it("prints status, name, detail and the fix on one line", () => {
    expect(
      formatCheck({ name: "image", status: "warn", detail: "not built", fix: "run 'harness image'" }),
    ).toBe("warn image: not built (fix: run 'harness image')");
    expect(formatCheck({ name: "engine", status: "ok", detail: "fine" })).toBe("ok   engine: fine");
  });

  it("shows control characters in a detail (a workspace path, an engine's message) as escapes", () => {
    const detail = "/srv/a\u001b]0;t\u0007\u009b2J\u202eb\nnext";
    expect(formatCheck({ name: "workspace", status: "fail", detail })).toBe(
      "fail workspace: /srv/a\\x1b]0;t\\x07\\x9b2J\\u202eb\\nnext",
    );
  });
});
