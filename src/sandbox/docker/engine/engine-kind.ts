/**
 * Which engine serves the Docker API: Docker itself or Podman's Docker-compatible service. The
 * create request differs only where Podman reads a setting differently (container-spec.ts); for
 * Docker it stays byte for byte what it was, so a Docker container's config hash never changes.
 */
import { readFile } from "node:fs/promises";
import type Docker from "dockerode";
import { SandboxError } from "../../../errors.js";
import { sandboxError } from "../exec/docker-errors.js";

export type EngineKind = "docker" | "podman";

/** The parts of GET /version that name the engine (Podman: "Podman Engine" among the Components). */
export interface EngineVersionInfo {
  Platform?: { Name?: string } | undefined;
  Components?: Array<{ Name?: string }> | undefined;
}

/** "podman" when the platform or a component is named Podman; Docker otherwise. */
export function engineKindOf(version: EngineVersionInfo): EngineKind {
  const names = [version.Platform?.Name, ...(version.Components ?? []).map((c) => c.Name)];
  return names.some((name) => /podman/i.test(name ?? "")) ? "podman" : "docker";
}

/** Answers to GET /version that connecting already had (docker-client.ts): not asked again. */
const knownVersions = new WeakMap<Docker, EngineVersionInfo>();

/** Keeps the engine's GET /version answer for `docker`, for `detectEngineKind`. */
export function rememberVersion(docker: Docker, version: EngineVersionInfo): void {
  knownVersions.set(docker, version);
}

/** Asks the engine (one GET /version, unless connecting already did) which kind it is. */
export async function detectEngineKind(docker: Docker): Promise<EngineKind> {
  const version =
    knownVersions.get(docker) ??
    (await docker.version().catch((error: unknown) => {
      throw sandboxError("asking the engine for its version failed", error);
    }));
  return engineKindOf(version as EngineVersionInfo);
}

/** What the create request must know about the engine it goes to. */
export type EngineSettings =
  | { kind: "docker" }
  | {
      kind: "podman";
      /** The sandbox's seccomp profile as a file Podman can open (podman-seccomp.ts). */
      seccompProfilePath: string;
      /** Open files and processes, soft = hard (podmanProcessLimits). */
      nofile: number;
      nproc: number;
      /**
       * Rootless Podman: the container runs in a user namespace of the user running Podman, and
       * `keep-id` maps that user to the same uid inside, so the sandbox user owns the workspace as
       * on the host while root inside is no one outside (a stronger default than rootful).
       */
      rootless: boolean;
    };

export const DOCKER_ENGINE: EngineSettings = { kind: "docker" };

/** The hard limit named `name` in a /proc/PID/limits text; undefined when absent or unlimited. */
export function hardLimit(limits: string, name: string): number | undefined {
  const line = limits.split("\n").find((l) => l.startsWith(name));
  const hard = line?.slice(name.length).trim().split(/\s+/)[1];
  return hard !== undefined && /^\d+$/.test(hard) ? Number(hard) : undefined;
}

/**
 * Open-file and process limits for a Podman container. Docker leaves them out of a container that
 * sets any Ulimit (it inherits dockerd's); Podman, given harness's `core` limit, adds its own
 * defaults (1048576 each when rootful), and a runtime without CAP_SYS_RESOURCE (a host that is itself
 * a container) cannot raise its limits that far: "error setting rlimit type 7: operation not
 * permitted". So harness names both: open files as harness itself may have them (a local engine runs
 * with the same), processes at most 32768, which Podman 4.3 sets for its own service (measured) —
 * the pids limit stays the sandbox's real bound on processes.
 */
export function podmanProcessLimits(limits: string): { nofile: number; nproc: number } {
  const nofile = Math.min(hardLimit(limits, "Max open files") ?? 1_048_576, 1_048_576);
  const nproc = Math.min(hardLimit(limits, "Max processes") ?? 32_768, 32_768);
  return { nofile, nproc };
}

/** The part of Podman's GET /libpod/info harness reads. */
export interface PodmanHostInfo {
  host?: { security?: { rootless?: boolean }; cgroupControllers?: string[]; cgroupVersion?: string };
}

/** Podman's own description of its host (the Docker-compatible /info does not say rootless). */
export async function podmanHostInfo(docker: Docker): Promise<PodmanHostInfo> {
  // docker-modem puts its API version in front of the path when it has one.
  const versioned = (docker.modem as { version?: string }).version !== undefined;
  const path = versioned ? "/libpod/info" : "/v4.0.0/libpod/info";
  return new Promise((resolve, reject) => {
    docker.modem.dial(
      { path, method: "GET", options: {}, statusCodes: { 200: true, 404: "not found", 500: "server error" } },
      (error: unknown, data: unknown) => (error ? reject(error) : resolve(data as PodmanHostInfo)),
    );
  });
}

export const ROOTLESS_LIMITS_FIX = "use cgroup v2 with controller delegation, or rootful Podman";

/**
 * What a rootless Podman lacks to limit the sandbox, or undefined (rootful, or all controllers
 * delegated). Measured with Podman 4.3.1 rootless on cgroup v1: a create with Memory, PidsLimit and
 * NanoCpus answers `"Warnings": []`, and the container inspects with all three at 0 and runs unlimited
 * (`podman run` itself says "Resource limits are not supported and ignored on cgroups V1 rootless
 * systems").
 */
export function rootlessLimitsProblem(info: PodmanHostInfo | undefined): string | undefined {
  const host = info?.host;
  if (!host?.security?.rootless) return undefined;
  const controllers = host.cgroupControllers ?? [];
  const missing = ["memory", "pids", "cpu"].filter((c) => !controllers.includes(c));
  if (missing.length === 0) return undefined;
  return `rootless Podman here cannot apply the sandbox's ${missing.join(", ")} limits (cgroup ${host.cgroupVersion ?? "?"}, delegated controllers: ${controllers.join(", ") || "none"})`;
}

/**
 * Refuses, in one line, a rootless Podman that cannot limit the sandbox: on cgroup v1 (or without
 * delegated controllers) it silently drops the memory, CPU and process limits, and with them the
 * bound on fork bombs and memory hogs.
 */
export function checkRootlessLimits(info: PodmanHostInfo): void {
  const problem = rootlessLimitsProblem(info);
  if (problem !== undefined) throw new SandboxError(`${problem}: ${ROOTLESS_LIMITS_FIX}`);
}

/**
 * Detects the engine and prepares what its create request needs (Podman: the profile's file, limits).
 * `podmanProfilePath` writes the seccomp profile where Podman reads it (container/podman-seccomp.ts).
 */
export async function engineSettings(
  docker: Docker,
  podmanProfilePath: () => string,
): Promise<EngineSettings> {
  if ((await detectEngineKind(docker)) === "docker") return DOCKER_ENGINE;
  const info = await podmanHostInfo(docker).catch((error: unknown) => {
    throw sandboxError("asking Podman about its host failed", error);
  });
  checkRootlessLimits(info);
  const limits = await readFile("/proc/self/limits", "utf8").catch(() => "");
  return {
    kind: "podman",
    seccompProfilePath: podmanProfilePath(),
    ...podmanProcessLimits(limits),
    rootless: info.host?.security?.rootless === true,
  };
}
