/** What `DockerSandbox.open` takes, and how it becomes the container's settings. */
import type Docker from "dockerode";
import { SANDBOX_DEFAULTS, type SandboxRequest } from "../sandbox-request.js";
import type { SandboxSettings } from "./container-spec.js";

/** The request (flags and env, via config.ts), plus what only the backend and its tests set. */
export interface DockerSandboxOptions extends SandboxRequest {
  /** Container path of the workspace. */
  workdir?: string | undefined;
  /** Bytes of stdout and of stderr kept from the start and from the end of each command's output. */
  outputHeadBytes?: number | undefined;
  outputTailBytes?: number | undefined;
  /** Seconds between TERM and KILL when a command is killed. */
  killGraceSeconds?: number | undefined;
  /** Remove the container on stop (throwaway sandboxes) instead of leaving it for the next run. */
  removeOnStop?: boolean | undefined;
  /** Image build progress and lifecycle messages, for the user (not the model). */
  onProgress?: ((line: string) => void) | undefined;
  /** An engine client; default: DOCKER_HOST or the local socket. */
  docker?: Docker | undefined;
}

/** The settings `open` resolved itself: never taken from the caller as is. */
export type ResolvedParts = Pick<
  SandboxSettings,
  "image" | "workspace" | "user" | "isolation" | "protectedMounts"
>;

/** Every limit the caller left out gets its default (SANDBOX_DEFAULTS). */
export function resolveSettings(options: DockerSandboxOptions, parts: ResolvedParts): SandboxSettings {
  const d = SANDBOX_DEFAULTS;
  return {
    ...parts,
    workdir: options.workdir ?? d.workdir,
    network: options.network ?? d.network,
    memoryBytes: options.memoryBytes ?? d.memoryBytes,
    cpus: options.cpus ?? d.cpus,
    pidsLimit: options.pidsLimit ?? d.pidsLimit,
    tmpSizeMiB: options.tmpSizeMiB ?? d.tmpSizeMiB,
    homeSizeMiB: options.homeSizeMiB ?? d.homeSizeMiB,
    runtime: options.runtime,
  };
}
