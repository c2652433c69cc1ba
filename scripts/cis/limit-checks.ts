/** CIS checks about resource limits and how the container is kept running. */
import { type CisCheck, na, pass, when } from "./cis-types.js";

export const LIMIT_CHECKS: CisCheck[] = [
  {
    id: "5.10",
    title: "memory usage limited",
    run: ({ container: c }) =>
      when((c.HostConfig.Memory ?? 0) > 0, `Memory ${c.HostConfig.Memory} bytes`, "no memory limit"),
  },
  {
    // docker-bench reads CpuShares alone; a hard limit (NanoCpus) bounds the container more strictly.
    id: "5.11",
    title: "CPU priority set (a hard CPU limit counts)",
    run: ({ container: c }) => {
      const { NanoCpus = 0, CpuQuota = 0, CpuShares = 0 } = c.HostConfig;
      return when(
        NanoCpus > 0 || CpuQuota > 0 || CpuShares > 0,
        `NanoCpus ${NanoCpus}, CpuQuota ${CpuQuota}, CpuShares ${CpuShares}`,
        "no CPU limit or shares",
      );
    },
  },
  {
    id: "5.12",
    title: "root filesystem mounted read-only",
    run: ({ container: c }) =>
      when(c.HostConfig.ReadonlyRootfs === true, "ReadonlyRootfs true", "root filesystem writable"),
  },
  {
    // The benchmark asks for on-failure:5 so a crashing container cannot restart forever; never
    // restarting at all meets that too.
    id: "5.14",
    title: "restart attempts limited (on-failure at most 5, or none)",
    run: ({ container: c }) => {
      const { Name = "", MaximumRetryCount = 0 } = c.HostConfig.RestartPolicy ?? {};
      const ok =
        Name === "" ||
        Name === "no" ||
        (Name === "on-failure" && MaximumRetryCount > 0 && MaximumRetryCount <= 5);
      return when(ok, `RestartPolicy '${Name || "no"}'`, `RestartPolicy '${Name}' ${MaximumRetryCount}`);
    },
  },
  {
    id: "5.18",
    title: "default ulimits overridden only where needed",
    run: ({ container: c }) => {
      const limits = c.HostConfig.Ulimits ?? [];
      if (limits.length === 0) return na("engine defaults kept");
      return pass(limits.map((u) => `${u.Name}=${u.Soft}:${u.Hard}`).join(", "));
    },
  },
  {
    id: "5.24",
    title: "cgroup usage confirmed (default parent)",
    run: ({ container: c }) =>
      when(!c.HostConfig.CgroupParent, "default cgroup parent", `CgroupParent ${c.HostConfig.CgroupParent}`),
  },
  {
    id: "5.26",
    title: "container health checked at runtime",
    run: ({ container: c }) =>
      c.Config.Healthcheck?.Test?.length
        ? pass(
            // One table row: the probe's first words and its interval (Docker's default is 30 s).
            `HEALTHCHECK ${c.Config.Healthcheck.Test.join(" ").replace(/\s+/g, " ").slice(0, 24)}…, every ${(c.Config.Healthcheck.Interval || 30e9) / 1e9} s`,
          )
        : na("no HEALTHCHECK: harness checks the container before use and after a failed command"),
  },
  {
    id: "5.27",
    title: "image always the latest version",
    run: () => na("manual; the image is built locally and tagged by a hash of sandbox/"),
  },
  {
    id: "5.28",
    title: "PIDs cgroup limit used",
    run: ({ container: c }) =>
      when((c.HostConfig.PidsLimit ?? 0) > 0, `PidsLimit ${c.HostConfig.PidsLimit}`, "no pids limit"),
  },
];
