import { mkdirSync } from "node:fs";
import { join } from "node:path";
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { type CisInput, collectCisInput, evaluateCis } from "../../scripts/cis-checks.js";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import { skipDocker } from "../support/docker-available.js";
import { makeWorkspace } from "../support/workspace.js";

/** The same evaluation as `node --import tsx scripts/cis-check.ts`, on a sandbox with default settings. */
describe.skipIf(skipDocker)("CIS Docker Benchmark, container runtime (section 5)", () => {
  it("has no FAIL on a default sandbox, and the checks turn to FAIL on an unsafe configuration", async () => {
    using ws = makeWorkspace();
    mkdirSync(join(ws.path, ".git"));
    const docker = new Docker();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const input = await collectCisInput(docker, sandbox.containerId, (command) => sandbox.exec(command));
    const results = evaluateCis(input);
    expect(results.filter((r) => r.status === "FAIL")).toEqual([]);
    const passed = results.filter((r) => r.status === "PASS").map((r) => r.id);
    // Named deviations: the container's root is harness's machinery with SETUID and SETGID only.
    const deviations = results.filter((r) => r.status === "DEVIATION").map((r) => r.id);
    expect(deviations).toEqual(["4.1", "5.3", "5.23"]);
    for (const id of ["5.4", "5.5", "5.9", "5.10", "5.12", "5.15", "5.21", "5.22", "5.25", "5.26"]) {
      expect(passed, id).toContain(id);
    }
    expect(passed).toEqual(expect.arrayContaining(["5.28", "5.31"]));

    // The same container made unsafe on paper: every check that guards it must turn to FAIL.
    const bad: CisInput = structuredClone(input);
    const host = bad.container.HostConfig;
    Object.assign(host, {
      Privileged: true,
      CapAdd: ["SYS_ADMIN"],
      NetworkMode: "host",
      PidMode: "host",
      IpcMode: "host",
      UTSMode: "host",
      UsernsMode: "host",
      ReadonlyRootfs: false,
      Memory: 0,
      NanoCpus: 0,
      PidsLimit: 0,
      SecurityOpt: ["seccomp=unconfined"],
      RestartPolicy: { Name: "always", MaximumRetryCount: 0 },
      Devices: [{ PathOnHost: "/dev/sda", PathInContainer: "/dev/sda", CgroupPermissions: "rwm" }],
      CgroupParent: "/custom",
    });
    bad.container.Config.User = "000:000"; // root, however spelled
    bad.container.Mounts.push(
      { Type: "bind", Source: "/etc", Destination: "/host-etc", Mode: "", RW: true, Propagation: "rshared" },
      {
        Type: "bind",
        Source: "/var/run/docker.sock",
        Destination: "/var/run/docker.sock",
        Mode: "",
        RW: true,
        Propagation: "rprivate",
      },
    );
    bad.container.NetworkSettings.Ports = { "22/tcp": [{ HostIp: "0.0.0.0", HostPort: "22" }] };
    bad.processes = ["/usr/sbin/sshd -D"];
    bad.execs = [{ user: "root", privileged: true, command: "bash" }];
    const failed = evaluateCis(bad)
      .filter((r) => r.status === "FAIL")
      .map((r) => r.id);
    expect(failed).toEqual([
      "4.1",
      "5.3",
      "5.4",
      "5.5",
      "5.6",
      "5.7",
      "5.8",
      "5.9",
      "5.10",
      "5.11",
      "5.12",
      "5.13",
      "5.14",
      "5.15",
      "5.16",
      "5.17",
      "5.19",
      "5.20",
      "5.21",
      "5.22",
      "5.23",
      "5.24",
      "5.25",
      "5.28",
      "5.30",
      "5.31",
    ]);

    // A custom seccomp profile passes 5.21 only while it allows nothing beyond Docker's default.
    const custom = (profile: object) => {
      const changed: CisInput = structuredClone(input);
      changed.container.HostConfig.SecurityOpt = [`seccomp=${JSON.stringify(profile)}`];
      return evaluateCis(changed).find((r) => r.id === "5.21")?.status;
    };
    const ours = ((input.container.HostConfig.SecurityOpt as string[] | null) ?? []).find((o) =>
      o.startsWith("seccomp="),
    );
    expect(ours).toBeDefined();
    const profile = JSON.parse(ours?.slice("seccomp=".length) ?? "{}");
    expect(custom(profile)).toBe("PASS");
    expect(custom({ ...profile, defaultAction: "SCMP_ACT_ALLOW" })).toBe("FAIL");
    const extra = {
      names: ["kexec_load"],
      action: "SCMP_ACT_ALLOW",
      args: [],
      comment: "",
      includes: {},
      excludes: {},
    };
    expect(custom({ ...profile, syscalls: [...profile.syscalls, extra] })).toBe("FAIL");
  });
});
