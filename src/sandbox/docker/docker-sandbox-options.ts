/** What `DockerSandbox.open` takes, and how it becomes the container's settings. */
import type Docker from "dockerode";
import type { ProtectOptions } from "../host/protected-paths.js";
import { DEFAULT_LIMITS, type SandboxSettings } from "./container-spec.js";

export interface DockerSandboxOptions {
  /** Host directory to mount; must exist. */
  workspace: string;
  /** Use this existing image instead of building harness's own (it only needs /bin/sh). */
  image?: string | undefined;
  /** UID or UID:GID (decimal); default: the workspace owner's. uid 0 and gid 0 are refused in any spelling. */
  user?: string | undefined;
  network?: string | undefined;
  memoryBytes?: number | undefined;
  cpus?: number | undefined;
  pidsLimit?: number | undefined;
  tmpSizeMiB?: number | undefined;
  homeSizeMiB?: number | undefined;
  runtime?: string | undefined;
  /** Read-only mounts of `.git/config`, `.git/hooks`, `.envrc`… over the workspace (protected-paths.ts). */
  protect?: ProtectOptions | undefined;
  /** Container path of the workspace. Default /workspace. */
  workdir?: string | undefined;
  /** Per-command timeout when the call gives none. Default 120 s. */
  defaultTimeoutMs?: number | undefined;
  /** Bytes of stdout and of stderr kept from the start and from the end of each command's output. */
  outputHeadBytes?: number | undefined;
  outputTailBytes?: number | undefined;
  /** Seconds between TERM and KILL when a command is killed. Default 2. */
  killGraceSeconds?: number | undefined;
  /** Remove the container on stop (throwaway sandboxes) instead of leaving it for the next run. */
  removeOnStop?: boolean | undefined;
  /**
   * "bind" (default): the workspace is mounted. "copy": it is copied into a throwaway container
   * (always removed on stop) and changes come back only through `exportChanges`/`applyChanges`.
   */
  isolation?: "bind" | "copy" | undefined;
  /** Copy mode: most bytes of file content copied in, and back out. Default 1 GiB. */
  copyLimitBytes?: number | undefined;
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

/** Every limit the caller left out gets its default. */
export function resolveSettings(options: DockerSandboxOptions, parts: ResolvedParts): SandboxSettings {
  return {
    ...parts,
    workdir: options.workdir ?? "/workspace",
    network: options.network ?? "none",
    memoryBytes: options.memoryBytes ?? DEFAULT_LIMITS.memoryBytes,
    cpus: options.cpus ?? DEFAULT_LIMITS.cpus,
    pidsLimit: options.pidsLimit ?? DEFAULT_LIMITS.pidsLimit,
    tmpSizeMiB: options.tmpSizeMiB ?? DEFAULT_LIMITS.tmpSizeMiB,
    homeSizeMiB: options.homeSizeMiB ?? DEFAULT_LIMITS.homeSizeMiB,
    runtime: options.runtime,
  };
}
