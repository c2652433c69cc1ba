/** CIS checks about who processes run as and what they may gain. */
import {
  type CisCheck,
  deviation,
  fail,
  isRoot,
  MACHINERY_EXEC,
  machineryRoot,
  na,
  notHost,
  pass,
  securityOpts,
  when,
} from "./cis-types.js";
import { allowedBeyondDefault } from "./seccomp-profile-check.js";

export const PRIVILEGE_CHECKS: CisCheck[] = [
  {
    id: "4.1",
    title: "a non-root user for the container (section 4; the sandbox's first rule)",
    run: ({ container: c }) => {
      if (c.Config.User !== "" && !isRoot(c.Config.User)) return pass(`User ${c.Config.User}`);
      return machineryRoot(c)
        ? deviation(
            `User ${c.Config.User}: only harness's machinery (PID 1, the executor), holding ${((c.HostConfig.CapAdd as string[] | null) ?? []).join(",") || "nothing"}, no_new_privs; every command runs as the workspace owner with no capability`,
          )
        : fail("runs as root");
    },
  },
  {
    id: "5.1",
    title: "AppArmor profile, if applicable",
    run: ({ container: c, engineSecurityOptions: e }) =>
      !e.some((o) => o.includes("apparmor"))
        ? na("the engine has no AppArmor")
        : when(!["", "unconfined"].includes(c.AppArmorProfile), `profile ${c.AppArmorProfile}`, "unconfined"),
  },
  {
    id: "5.2",
    title: "SELinux security options, if applicable",
    run: ({ container: c, engineSecurityOptions: e }) =>
      !e.some((o) => o.includes("selinux"))
        ? na("the engine has no SELinux")
        : when(c.ProcessLabel !== "", `label ${c.ProcessLabel}`, "no SELinux label"),
  },
  {
    id: "5.3",
    title: "Linux kernel capabilities restricted",
    run: ({ container: c }) => {
      const add = (c.HostConfig.CapAdd as string[] | null) ?? [];
      const drop = (c.HostConfig.CapDrop as string[] | null) ?? [];
      if (add.length === 0) return pass(`CapDrop ${drop.join(",") || "none"}, CapAdd none`);
      return machineryRoot(c)
        ? deviation(
            `CapDrop ${drop.join(",")}, CapAdd ${add.join(",")}: the machinery's, to drop to the workspace owner; a command's uid change clears them`,
          )
        : fail(`CapAdd ${add.join(",")}`);
    },
  },
  {
    id: "5.4",
    title: "privileged containers not used",
    run: ({ container: c }) => when(!c.HostConfig.Privileged, "Privileged false", "Privileged true"),
  },
  {
    id: "5.21",
    title: "default seccomp profile not disabled",
    run: ({ container: c, engineSecurityOptions: e }) => {
      if (securityOpts(c).some((o) => /^seccomp[:=]unconfined$/.test(o))) return fail("seccomp=unconfined");
      const engine = e.find((o) => o.includes("seccomp"));
      if (engine === undefined) return fail("the engine has no seccomp support");
      const custom = securityOpts(c).find((o) => o.startsWith("seccomp="));
      if (custom === undefined) return pass(`engine: ${engine}`);
      const beyond = allowedBeyondDefault(custom.slice("seccomp=".length));
      return when(
        beyond.length === 0,
        "Docker's default profile plus restrictions (nothing allowed beyond it)",
        `a custom profile allows more than the default: ${beyond.join(", ")}`,
      );
    },
  },
  {
    id: "5.22",
    title: "docker exec not used with --privileged",
    run: ({ execs }) =>
      execs.length === 0
        ? na("no exec was running to inspect")
        : when(
            !execs.some((x) => x.privileged),
            `${execs.length} exec(s), none privileged`,
            "a privileged exec",
          ),
  },
  {
    id: "5.23",
    title: "docker exec not used with --user=root",
    run: ({ execs, container: c }) => {
      if (execs.length === 0) return na("no exec was running to inspect");
      const users = [...new Set(execs.map((x) => x.user || c.Config.User))];
      if (!users.some(isRoot)) return pass(`exec users: ${users.join(",")}`);
      const rootExecs = execs.filter((x) => isRoot(x.user || c.Config.User));
      return machineryRoot(c) && rootExecs.every((x) => MACHINERY_EXEC.test(x.command))
        ? deviation(
            `exec users: ${users.join(",")}; root only for harness's executor and relay, which act as the workspace owner and run commands as it`,
          )
        : fail(`exec users: ${users.join(",")}`);
    },
  },
  {
    id: "5.25",
    title: "container restricted from acquiring additional privileges",
    run: ({ container: c }) =>
      when(
        securityOpts(c).some((o) => /^no-new-privileges([:=]true)?$/.test(o)),
        "no-new-privileges",
        "no-new-privileges not set",
      ),
  },
  {
    id: "5.30",
    title: "host user namespace not shared",
    run: ({ container: c }) => notHost("UsernsMode", c.HostConfig.UsernsMode),
  },
];
