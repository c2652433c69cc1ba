import { describe, expect, it } from "vitest";
import { containerCreateOptions } from "../../../../../src/sandbox/docker/container/container-spec.js";
import { seccompSecurityOpt } from "../../../../../src/sandbox/docker/container/seccomp-profile.js";
import { resolveSettings } from "../../../../../src/sandbox/docker/docker-sandbox-options.js";
import {
  checkRootlessLimits,
  DOCKER_ENGINE,
  engineKindOf,
  hardLimit,
  podmanProcessLimits,
} from "../../../../../src/sandbox/docker/engine/engine-kind.js";

const settings = resolveSettings(
  { workspace: "/w" },
  { image: "img", workspace: "/w", user: "1000:1000", isolation: "bind" },
);
const podman = {
  kind: "podman",
  seccompProfilePath: "/state/seccomp/p.json",
  nofile: 20000,
  nproc: 32768,
  rootless: false,
} as const;

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max processes             96364                96364                processes
Max open files            1024                 20000                files
Max locked memory         unlimited            unlimited            bytes
`;

describe("engine kind", () => {
  it("is Podman when GET /version names it, in the platform or a component", () => {
    expect(engineKindOf({ Components: [{ Name: "Podman Engine" }, { Name: "Conmon" }] })).toBe("podman");
    expect(engineKindOf({ Platform: { Name: "Podman Engine" } })).toBe("podman");
    expect(
      engineKindOf({ Platform: { Name: "Docker Engine - Community" }, Components: [{ Name: "Engine" }] }),
    ).toBe("docker");
    expect(engineKindOf({})).toBe("docker");
  });

  it("reads hard limits, and caps Podman's at what its own service runs with", () => {
    expect(hardLimit(LIMITS, "Max open files")).toBe(20000);
    expect(hardLimit(LIMITS, "Max locked memory")).toBeUndefined();
    expect(podmanProcessLimits(LIMITS)).toEqual({ nofile: 20000, nproc: 32768 });
    expect(podmanProcessLimits("")).toEqual({ nofile: 1_048_576, nproc: 32_768 });
  });

  it("gives root to the machinery only in harness's own image: a foreign one runs it as the sandbox user", () => {
    const foreign = resolveSettings(
      { workspace: "/w" },
      { image: "img", workspace: "/w", user: "1000:1000", isolation: "bind", foreignImage: true },
    );
    for (const engine of [DOCKER_ENGINE, podman]) {
      const options = containerCreateOptions(foreign, engine);
      expect(options.User).toBe("1000:1000");
      expect(options.HostConfig?.CapAdd).toBeUndefined();
      expect(options.HostConfig?.CapDrop).toEqual(["ALL"]);
    }
    expect(containerCreateOptions(settings, DOCKER_ENGINE).User).toBe("0:0");
  });

  it("changes only the tmpfs owner option, the seccomp spelling, the limits and the machinery's user for Podman", () => {
    const docker = containerCreateOptions(settings, DOCKER_ENGINE);
    expect(JSON.stringify(containerCreateOptions(settings))).toBe(JSON.stringify(docker));
    const onPodman = containerCreateOptions(settings, podman);
    const tmpfs = onPodman.HostConfig?.Tmpfs ?? {};
    expect(tmpfs["/home/sandbox"]).toBe("rw,nosuid,nodev,exec,size=256m,mode=0700,U");
    expect(docker.HostConfig?.Tmpfs?.["/home/sandbox"]).toBe(
      "rw,nosuid,nodev,exec,size=256m,mode=0700,uid=1000,gid=1000",
    );
    expect(tmpfs["/tmp"]).toBe(docker.HostConfig?.Tmpfs?.["/tmp"]);
    expect(onPodman.HostConfig?.SecurityOpt).toEqual([
      "no-new-privileges:true",
      "seccomp=/state/seccomp/p.json",
    ]);
    expect(docker.HostConfig?.SecurityOpt).toEqual(["no-new-privileges:true", seccompSecurityOpt()]);
    expect(onPodman.HostConfig?.Ulimits).toEqual([
      { Name: "core", Soft: 0, Hard: 0 },
      { Name: "nofile", Soft: 20000, Hard: 20000 },
      { Name: "nproc", Soft: 32768, Hard: 32768 },
    ]);
    // Podman keeps the container's user the sandbox user (its tmpfs owner follows it): no root machinery.
    expect(docker.User).toBe("0:0");
    expect(docker.HostConfig?.CapAdd).toEqual(["SETUID", "SETGID"]);
    expect(onPodman.User).toBe("1000:1000");
    expect(onPodman.HostConfig?.CapAdd).toBeUndefined();
    const strip = (o: typeof docker) => ({
      ...o,
      User: undefined,
      HostConfig: {
        ...o.HostConfig,
        Tmpfs: undefined,
        SecurityOpt: undefined,
        Ulimits: undefined,
        CapAdd: undefined,
      },
    });
    expect(strip(onPodman)).toEqual(strip(docker));
    expect(onPodman.HostConfig?.UsernsMode).toBeUndefined();
    const rootless = containerCreateOptions(settings, { ...podman, rootless: true });
    expect(rootless.HostConfig?.UsernsMode).toBe("keep-id");
  });

  it("refuses rootless Podman without delegated memory, pids and cpu controllers, in one line", () => {
    const host = (rootless: boolean, cgroupControllers: string[]) => ({
      host: { security: { rootless }, cgroupControllers, cgroupVersion: "v1" },
    });
    expect(() => checkRootlessLimits(host(true, []))).toThrow(
      /^rootless Podman here cannot apply the sandbox's memory, pids, cpu limits \(cgroup v1, delegated controllers: none\): use cgroup v2/,
    );
    expect(() => checkRootlessLimits(host(true, ["cpu", "memory"]))).toThrow(/pids limits/);
    expect(() => checkRootlessLimits(host(true, ["cpu", "memory", "pids"]))).not.toThrow();
    expect(() => checkRootlessLimits(host(false, []))).not.toThrow();
  });
});
