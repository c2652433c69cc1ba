/**
 * The sandbox container's settings and their translation into a Docker create request. This is the
 * one place the hardening is defined; docker-compose.yml is checked against it by a test.
 */

import { createHash } from "node:crypto";
import type Docker from "dockerode";
import { STATE_DIR } from "../../exec/exec-scripts.js";
import { type ProtectedMount, protectedBindMounts } from "../../host/git/protected-paths.js";
import type { IsolationKind } from "../../sandbox-request.js";
import { parseUserIds } from "../../sandbox-user.js";
import { EGRESS_MOUNT } from "../egress/egress-relay-script.js";
import { DOCKER_ENGINE, type EngineSettings } from "../engine/engine-kind.js";
import { containerHealthCommand, initCommand } from "./container-scripts.js";
import { seccompSecurityOpt } from "./seccomp-profile.js";

/** How a workspace's sandbox container is set up. Every field has a CLI flag or a fixed reason. */
export interface SandboxSettings {
  /** Image to run. */
  image: string;
  /**
   * The image is not one harness built from its own sandbox/ (own-image.ts): nothing of it may run
   * as root, so the machinery runs as `user` (as on Podman). Absent: harness's own image.
   */
  foreignImage?: boolean | undefined;
  /** Host path of the workspace (resolved, real path). */
  workspace: string;
  /** Where the workspace appears in the container; also the default cwd. */
  workdir: string;
  /** "uid:gid" every process runs as: the workspace owner, never root. */
  user: string;
  /** Docker network mode: "none" (default), "bridge", or a network name. */
  network: string;
  /** Memory limit in bytes (swap disabled: the same number). */
  memoryBytes: number;
  /** CPU limit in cores. */
  cpus: number;
  /** Maximum number of processes (fork bombs stop here). */
  pidsLimit: number;
  /** Size of the /tmp tmpfs in MiB (an unsized tmpfs counts against memory and can wedge the container). */
  tmpSizeMiB: number;
  /** Size of the home directory tmpfs in MiB. */
  homeSizeMiB: number;
  /** OCI runtime, e.g. "runsc" for gVisor; undefined for the engine's default. */
  runtime?: string | undefined;
  /** Workspace paths mounted again over the workspace, read-only (protected-paths.ts); none when absent. */
  protectedMounts?: readonly ProtectedMount[] | undefined;
  /**
   * "bind" (default): the workspace is bind-mounted. "copy": nothing of the host is mounted; the
   * workdir is an anonymous volume that copy-container.ts fills (NoCopy: an image's own files there
   * would otherwise show up as changes).
   */
  isolation?: IsolationKind | undefined;
  /**
   * Allowlist mode: the host directory of the egress gateway's socket, mounted read-only at
   * `EGRESS_MOUNT`; the network stays "none". It must be the same on every run of a workspace
   * (host/state-dir.ts), or the container would be recreated each time.
   */
  egressSocketDir?: string | undefined;
  /**
   * The workspace's package cache (package-cache/): the named volume mounted read-write at
   * `PACKAGE_CACHE_DIR`, with the toolchains' cache variables pointing into it; none when absent.
   */
  packageCacheVolume?: string | undefined;
}

export const HOME_DIR = "/home/sandbox";

/**
 * Who harness's machinery in the container runs as (PID 1 and its child, the executor, the relay):
 * root, holding only CAP_SETUID and CAP_SETGID (MACHINERY_CAPS), so that it can drop to the workspace
 * owner while no command (that uid, no capabilities, no_new_privs) can signal, trace or open it.
 * Commands never run as this user: every exec that runs one names the sandbox user.
 */
export const MACHINERY_USER = "0:0";

/**
 * The machinery's capabilities and why: SETUID and SETGID let it become the workspace owner (the
 * executor forks each command as root and drops groups, gids and uids before exec). Nothing else:
 * it signals its commands and reads their /proc entries with the commands' uid as its effective uid
 * (executor.py), not with CAP_KILL or CAP_SYS_PTRACE. A command loses both on the uid change.
 */
export const MACHINERY_CAPS = ["SETUID", "SETGID"] as const;

/**
 * Whether the machinery runs as root. Podman (4.3) cannot give a tmpfs to another user than the
 * container's (its `U` option follows the container's User), so there the container's user stays
 * the sandbox user and the machinery shares the commands' uid (README). The same in an image harness
 * did not build (`foreignImage`): the machinery is the image's own `/bin/sh`, `sleep` and `python3`,
 * which must never run as root (a devcontainer's image is the workspace's to choose).
 */
export function rootMachinery(
  engine: EngineSettings,
  image?: { foreignImage?: boolean | undefined },
): boolean {
  return engine.kind !== "podman" && image?.foreignImage !== true;
}

/** Where the package cache volume appears in the container: outside the workspace and the home. */
export const PACKAGE_CACHE_DIR = "/var/cache/harness";

/**
 * The toolchains' download and build caches, in the package cache: npm's and pip's, Go's module and
 * build caches, cargo's home (its registry and git checkouts; cargo has no variable for those alone)
 * and Maven's local repository (mavenrc.sh keeps MAVEN_OPTS and adds the proxy's properties). Not
 * XDG_CACHE_HOME: that would share every tool's cache between tasks (pre-commit's hook checkouts),
 * and none of these needs it. npm writes its debug logs into its cache unless told otherwise: they
 * stay in the home, so one task's logs (its command lines, its errors) are not the next task's to read.
 */
export function packageCacheEnv(): string[] {
  return [
    `npm_config_cache=${PACKAGE_CACHE_DIR}/npm`,
    `npm_config_logs_dir=${HOME_DIR}/.npm/_logs`,
    `PIP_CACHE_DIR=${PACKAGE_CACHE_DIR}/pip`,
    `GOMODCACHE=${PACKAGE_CACHE_DIR}/go/mod`,
    `GOCACHE=${PACKAGE_CACHE_DIR}/go/build`,
    `CARGO_HOME=${PACKAGE_CACHE_DIR}/cargo`,
    `MAVEN_OPTS=-Dmaven.repo.local=${PACKAGE_CACHE_DIR}/maven`,
  ];
}

/** The whole environment of the container: nothing from the host, so no secret can leak in. */
export function sandboxEnv(s?: Pick<SandboxSettings, "packageCacheVolume">): string[] {
  return [
    ...(s?.packageCacheVolume === undefined ? [] : packageCacheEnv()),
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    `HOME=${HOME_DIR}`,
    "LANG=C.UTF-8",
    "TERM=dumb",
    "PAGER=cat",
    "GIT_PAGER=cat",
    "PYTHONUNBUFFERED=1",
    "HISTFILE=/dev/null",
  ];
}

/**
 * A tmpfs owned by `owner` when given, `noexec` or explicitly `exec`: Docker and Podman mount a tmpfs
 * `noexec` unless told otherwise, and the toolchains need to run what they build in /tmp (`go test`,
 * a venv's scripts) and in the home (`pip install --user`, npx without the package cache). The
 * workspace runs programs anyway, so `noexec` there would keep no program out, only tools from
 * working. Docker passes `uid=`/`gid=` on to the mount; Podman (4.3)
 * refuses them ("unknown mount option") and has `U` instead: it mounts the tmpfs with uid=/gid= of
 * the container's User, which is `owner` itself, so the mount is the same (checked in
 * /proc/mounts by test/integration/conformance-podman.test.ts).
 */
function tmpfsOptions(
  sizeMiB: number,
  owner: string | undefined,
  mode: string,
  noexec = false,
  engine: EngineSettings = DOCKER_ENGINE,
): string {
  const ids = owner === undefined ? undefined : parseUserIds(owner);
  const ownerOpts =
    ids === undefined ? "" : engine.kind === "podman" ? ",U" : `,uid=${ids.uid},gid=${ids.gid}`;
  return `rw,nosuid,nodev,${noexec ? "noexec" : "exec"},size=${sizeMiB}m,mode=${mode}${ownerOpts}`;
}

/** Copy mode's workdir: an anonymous volume (empty Source), removed with the container. */
function copyVolumeMount(target: string): Docker.MountSettings {
  // @types/dockerode marks Labels and DriverConfig required; the Engine API does not.
  const VolumeOptions = { NoCopy: true } as Docker.MountSettings["VolumeOptions"];
  return { Type: "volume", Source: "", Target: target, VolumeOptions };
}

/** Read-only: the sandbox connects to the socket (allowed on a read-only mount) and writes nothing there. */
function egressMounts(s: SandboxSettings): Docker.MountSettings[] {
  if (s.egressSocketDir === undefined) return [];
  return [{ Type: "bind", Source: s.egressSocketDir, Target: EGRESS_MOUNT, ReadOnly: true }];
}

/**
 * The package cache: a named volume, read-write. The Engine API takes no mount options for a volume
 * (no nosuid/nodev, unlike the tmpfs mounts): what they would stop is stopped already, since the
 * seccomp profile refuses set-id modes, no capability allows mknod, and no_new_privs holds. NoCopy:
 * nothing of the image is copied in.
 */
function packageCacheMounts(s: SandboxSettings): Docker.MountSettings[] {
  if (s.packageCacheVolume === undefined) return [];
  // @types/dockerode marks Labels and DriverConfig required; the Engine API does not.
  const VolumeOptions = { NoCopy: true } as Docker.MountSettings["VolumeOptions"];
  return [
    {
      Type: "volume",
      Source: s.packageCacheVolume,
      Target: PACKAGE_CACHE_DIR,
      ReadOnly: false,
      VolumeOptions,
    },
  ];
}

/** Podman only: the limits it would otherwise set too high for some hosts (engine-kind.ts). */
function podmanUlimits(engine: EngineSettings): Docker.HostConfig["Ulimits"] & object {
  if (engine.kind !== "podman") return [];
  return [
    { Name: "nofile", Soft: engine.nofile, Hard: engine.nofile },
    { Name: "nproc", Soft: engine.nproc, Hard: engine.nproc },
  ];
}

/** The HostConfig part: every limit and every dropped privilege. */
export function hostConfig(s: SandboxSettings, engine: EngineSettings = DOCKER_ENGINE): Docker.HostConfig {
  const workspace: Docker.MountSettings[] =
    s.isolation === "copy"
      ? [copyVolumeMount(s.workdir)]
      : [
          { Type: "bind", Source: s.workspace, Target: s.workdir, ReadOnly: false },
          ...protectedBindMounts(s.workspace, s.workdir, s.protectedMounts ?? []),
        ];
  return {
    Mounts: [...workspace, ...egressMounts(s), ...packageCacheMounts(s)],
    NetworkMode: s.network,
    CapDrop: ["ALL"],
    ...(rootMachinery(engine, s) ? { CapAdd: [...MACHINERY_CAPS] } : {}),
    // Docker's default seccomp profile plus rules refusing setuid/setgid modes (seccomp-profile.ts).
    // Podman takes the profile as a file path (podman-seccomp.ts), Docker as its content.
    SecurityOpt: [
      "no-new-privileges:true",
      engine.kind === "podman" ? `seccomp=${engine.seccompProfilePath}` : seccompSecurityOpt(),
    ],
    ReadonlyRootfs: true,
    Tmpfs: {
      "/tmp": tmpfsOptions(s.tmpSizeMiB, undefined, "1777"),
      [HOME_DIR]: tmpfsOptions(s.homeSizeMiB, s.user, "0700", false, engine),
      [STATE_DIR]: tmpfsOptions(1, s.user, "0700", true, engine),
    },
    Memory: s.memoryBytes,
    MemorySwap: s.memoryBytes,
    NanoCpus: Math.round(s.cpus * 1e9),
    PidsLimit: s.pidsLimit,
    IpcMode: "private",
    Privileged: false,
    Init: false,
    RestartPolicy: { Name: "no" },
    Ulimits: [{ Name: "core", Soft: 0, Hard: 0 }, ...podmanUlimits(engine)],
    ...(s.runtime ? { Runtime: s.runtime } : {}),
    ...(engine.kind === "podman" && engine.rootless ? { UsernsMode: "keep-id" } : {}),
  };
}

/**
 * Docker's health check (CIS 5.26): every 5 minutes the engine execs health.sh as the container's
 * user (the machinery's); three failures in a row mark the container unhealthy (`docker ps` shows it).
 * harness does not wait on it: it checks the container itself before use and after a failed command.
 *
 * Why so seldom: a probe is an exec, and runc entering the container is nearly all of its cost:
 * measured here (Engine 20.10, a loaded machine) at 100–170 ms from start to end and about 110 ms
 * of CPU (the container's shim and its runc children), of which the `sh` inside takes about 10 ms.
 * Every 5 minutes that is about 1.4 s of CPU an hour (0.04 % of one core); Docker's default of 30 s
 * would cost ten times as much for a status nobody acts on sooner.
 *
 * Why it disturbs nothing: the probe is one `sh` of builtins, one pid for about 10 ms, with no
 * children. Its parent is outside the container, so the background count skips it.
 * If the end of a run (end-of-run.ts) catches it, `docker top` shows a third process and the
 * run's end spends one kill exec (~100 ms) it could have saved. It runs as root, so no command's kill
 * reaches it. Either way it counts as one failed probe of three.
 */
export function healthCheck(): Docker.HealthConfig {
  return { Test: ["CMD", ...containerHealthCommand()], Interval: 300e9, Timeout: 10e9, Retries: 3 };
}

/** The full create request, minus name and labels; `engine` changes only what Podman reads otherwise. */
export function containerCreateOptions(
  s: SandboxSettings,
  engine: EngineSettings = DOCKER_ENGINE,
): Docker.ContainerCreateOptions {
  return {
    Image: s.image,
    Cmd: initCommand(),
    User: rootMachinery(engine, s) ? MACHINERY_USER : s.user,
    WorkingDir: s.workdir,
    Env: sandboxEnv(s),
    Tty: false,
    OpenStdin: false,
    AttachStdin: false,
    StopTimeout: 1,
    Healthcheck: healthCheck(),
    NetworkDisabled: s.network === "none",
    HostConfig: hostConfig(s, engine),
  };
}

/** Changes whenever anything that shapes the container changes: then it is recreated, not reused. */
export function configHash(options: Docker.ContainerCreateOptions): string {
  return createHash("sha256").update(JSON.stringify(options)).digest("hex").slice(0, 16);
}
