/** CIS checks about what of the host the container can see or reach: mounts, ports, namespaces. */
import { type CisCheck, notHost, publishedPorts, when } from "./cis-types.js";

/** CIS 5.5's list. A mount of one of them, or of anything below one (except `/`), fails. */
const SENSITIVE_DIRS = ["/", "/boot", "/dev", "/etc", "/lib", "/proc", "/sys", "/usr"];

export const ISOLATION_CHECKS: CisCheck[] = [
  {
    id: "5.5",
    title: "sensitive host system directories not mounted",
    run: ({ container: c }) => {
      const bad = c.Mounts.filter((m) =>
        SENSITIVE_DIRS.some((d) => m.Source === d || (d !== "/" && m.Source.startsWith(`${d}/`))),
      );
      const all = c.Mounts.map((m) => `${m.Source}${m.RW ? "" : " (ro)"}`).join(", ");
      return when(bad.length === 0, `mounts: ${all}`, `mounted: ${bad.map((m) => m.Source).join(", ")}`);
    },
  },
  {
    id: "5.6",
    title: "sshd not run within containers",
    run: ({ processes }) =>
      when(!processes.some((p) => /\bsshd\b/.test(p)), "no sshd process", "sshd is running"),
  },
  {
    id: "5.7",
    title: "privileged ports not mapped",
    run: ({ container: c }) => {
      const low = publishedPorts(c).filter((p) => p.hostPort < 1024);
      return when(low.length === 0, "no host port below 1024", `host ports ${low.map((p) => p.hostPort)}`);
    },
  },
  {
    id: "5.8",
    title: "only needed ports open",
    run: ({ container: c }) => {
      const ports = publishedPorts(c);
      return when(ports.length === 0, "no port published", `published: ${ports.map((p) => p.hostPort)}`);
    },
  },
  {
    id: "5.9",
    title: "host network namespace not shared",
    run: ({ container: c }) => notHost("NetworkMode", c.HostConfig.NetworkMode),
  },
  {
    id: "5.13",
    title: "incoming traffic bound to a specific host interface",
    run: ({ container: c }) => {
      const wild = publishedPorts(c).filter((p) => ["", "0.0.0.0", "::"].includes(p.hostIp));
      return when(
        wild.length === 0,
        "no port on a wildcard address",
        `${wild.length} port(s) on all interfaces`,
      );
    },
  },
  {
    id: "5.15",
    title: "host process namespace not shared",
    run: ({ container: c }) => notHost("PidMode", c.HostConfig.PidMode),
  },
  {
    id: "5.16",
    title: "host IPC namespace not shared",
    run: ({ container: c }) => notHost("IpcMode", c.HostConfig.IpcMode),
  },
  {
    id: "5.17",
    title: "host devices not exposed",
    run: ({ container: c }) => {
      const devices = (c.HostConfig.Devices as { PathOnHost: string }[] | null) ?? [];
      return when(devices.length === 0, "no devices", `devices ${devices.map((d) => d.PathOnHost)}`);
    },
  },
  {
    id: "5.19",
    title: "mount propagation not shared",
    run: ({ container: c }) => {
      const shared = c.Mounts.filter((m) => /^r?shared$/.test(m.Propagation));
      return when(
        shared.length === 0,
        "no shared propagation",
        `shared: ${shared.map((m) => m.Destination)}`,
      );
    },
  },
  {
    id: "5.20",
    title: "host UTS namespace not shared",
    run: ({ container: c }) => notHost("UTSMode", c.HostConfig.UTSMode),
  },
  {
    id: "5.29",
    title: "default bridge docker0 not used",
    run: ({ container: c }) => {
      const mode = c.HostConfig.NetworkMode ?? "default";
      return when(!["bridge", "default"].includes(mode), `NetworkMode '${mode}'`, "on the default bridge");
    },
  },
  {
    id: "5.31",
    title: "Docker socket not mounted",
    run: ({ container: c }) => {
      const sock = c.Mounts.filter((m) =>
        [m.Source, m.Destination].some((p) => /(docker|containerd)\.sock$|^\/(var\/)?run$/.test(p)),
      );
      return when(sock.length === 0, "no engine socket mounted", `mounted: ${sock.map((m) => m.Source)}`);
    },
  },
];
