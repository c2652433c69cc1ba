/** What `DockerSandbox.open` takes, and how it becomes the container's settings. */
import type Docker from "dockerode";
import { ConfigError } from "../../errors.js";
import { SANDBOX_DEFAULTS, type SandboxRequest } from "../sandbox-request.js";
import type { SandboxSettings } from "./container/container-spec.js";

/** The request (flags and env, via config.ts), plus what only the backend and its tests set. */
export interface DockerSandboxOptions extends SandboxRequest {
  /** Container path of the workspace. */
  workdir?: string | undefined;
  /** Bytes of stdout and of stderr kept from the start and from the end of each command's output. */
  outputHeadBytes?: number | undefined;
  outputTailBytes?: number | undefined;
  /** Seconds between TERM and KILL when a command is killed. */
  killGraceSeconds?: number | undefined;
  /**
   * false: every command takes the per-call exec path (one exec each, its wrapper in the command's
   * reach) instead of the protected executor. For the benchmark's comparison and the tests of that
   * path; images without python3 take it anyway.
   */
  executor?: boolean | undefined;
  /**
   * Copy isolation: keep the copy when the session ends with its changes neither applied nor dropped
   * (`CopiedWorkspace.settle`), under this id, for `harness apply ID` or `harness rm ID`.
   */
  keepCopy?: { id: string; command: string } | undefined;
  /** Remove the container on stop (throwaway sandboxes) instead of leaving it for the next run. */
  removeOnStop?: boolean | undefined;
  /** Image build progress and lifecycle messages, for the user (not the model). */
  onProgress?: ((line: string) => void) | undefined;
  /** An engine client; default: the engine `dockerEnv` and `dockerContext` name (docker-endpoint.ts). */
  docker?: Docker | undefined;
  /** The environment the engine is resolved from (DOCKER_HOST, DOCKER_CONTEXT, HOME…); default: process.env. */
  dockerEnv?: NodeJS.ProcessEnv | undefined;
  /**
   * Allowlist mode: how the gateway resolves an allowed name (default: the host's resolver). Tests
   * map documentation names to loopback with it. Contract: rejects for a name it cannot resolve.
   */
  egressLookup?: ((hostname: string) => Promise<Array<{ address: string; family: number }>>) | undefined;
  /**
   * Certificates (PEM) the gateway verifies terminated hosts' origins against instead of Node's
   * store (tests with self-signed origins).
   */
  egressUpstreamCa?: readonly string[] | undefined;
  /** Allowlist mode's gateway bounds; defaults in SANDBOX_DEFAULTS (tests shorten them). */
  egressIdleMs?: number | undefined;
  egressMaxConnectionMs?: number | undefined;
  egressMaxConnections?: number | undefined;
}

/** The settings `open` resolved itself: never taken from the caller as is. */
export type ResolvedParts = Pick<
  SandboxSettings,
  | "image"
  | "workspace"
  | "user"
  | "isolation"
  | "protectedMounts"
  | "egressSocketDir"
  | "packageCacheVolume"
  | "foreignImage"
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

/**
 * Refuses allowlist mode (`egress`) with a network other than "none", in one line: the gateway is
 * only a boundary when the container has no other way out.
 */
export function checkEgressNetwork(options: DockerSandboxOptions): void {
  const network = options.network ?? SANDBOX_DEFAULTS.network;
  if (options.egress !== undefined && network !== "none") {
    throw new ConfigError(
      `--allow-host/--allow need --network none (the default): with --network ${network} the sandbox could reach any host around the allowlist`,
    );
  }
}
