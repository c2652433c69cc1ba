/**
 * What a caller asks of a sandbox, and every default, in one place: `config.ts` builds a request
 * from flags and env, the Docker backend fills in what is left out from `SANDBOX_DEFAULTS`, and the
 * system prompt tells the model the same numbers. Part of the contract: importable from everywhere.
 */

/** Defaults of every setting a request may leave out. */
export const SANDBOX_DEFAULTS = Object.freeze({
  /** Per-command timeout. */
  timeoutMs: 120_000,
  /** Docker network mode: no interface but `lo`. */
  network: "none",
  /** Where the workspace appears inside the sandbox. */
  workdir: "/workspace",
  memoryBytes: 2 * 1024 ** 3,
  cpus: 2,
  pidsLimit: 512,
  /** Size of the /tmp tmpfs, MiB (an unsized tmpfs counts against memory and can wedge the container). */
  tmpSizeMiB: 512,
  /** Size of the home directory's tmpfs, MiB. */
  homeSizeMiB: 256,
  /** Copy isolation: most bytes of file content copied in, and back out. */
  copyLimitBytes: 1024 ** 3,
  /**
   * Copy isolation: most files, directories and symlinks copied in, and read back. Empty files cost
   * no bytes, but each entry costs the host time (the engine archives some 6,000 a second) and
   * memory (under 1 KiB) to read back and compare. 100,000 is more than most repositories hold
   * without their dependencies and build output (which .harnessignore leaves out), and keeps reading
   * the copy back to about 20 s and 70 MB (bench/copy-entries-bench.ts).
   */
  copyMaxFiles: 100_000,
  /**
   * Bytes of stdout and of stderr kept from the start and from the end of each command's output:
   * 15 KiB a stream, so a command flooding both stays near the 30,000 characters other agents give
   * a model per call (the rest is saved for `read_output`).
   */
  outputHeadBytes: 5 * 1024,
  outputTailBytes: 10 * 1024,
  /** Seconds between TERM and KILL when a command is killed. */
  killGraceSeconds: 2,
  /** The package caches: most bytes a user's (one per workspace) keep together, checked (and pruned to) at sandbox opens. */
  packageCacheMaxBytes: 2 * 1024 ** 3,
  /** Allowlist mode: most bytes (up plus down) all of a run's connections may carry. */
  egressLimitBytes: 2 * 1024 ** 3,
  /**
   * Allowlist mode: distinct names one wildcard entry may have looked up in a run. Every name under
   * `*.suffix` is resolved on the host, and the query for it reaches whoever serves the zone, so the
   * names themselves can carry data out: 64 names of at most 253 bytes bound that to about 16 KB an
   * entry, while a real run reaches a handful of names under a registry's or a CDN's wildcard.
   */
  egressWildcardNames: 64,
  /** Allowlist mode: most connections open through the gateway at once. */
  egressMaxConnections: 64,
  /** Allowlist mode: a connection with no byte either way for this long is closed. */
  egressIdleMs: 60_000,
  /** Allowlist mode: longest life of one connection (a big download fits; a parked tunnel does not). */
  egressMaxConnectionMs: 30 * 60_000,
  /** Most connections open at once through each published port (each is one exec in the sandbox). */
  publishMaxConnections: 32,
});

import type { SecretGrant } from "./egress/secrets/secret-grant.js";

/** How the workspace gets into the sandbox: mounted ("bind") or copied ("copy"). */
export type IsolationKind = "bind" | "copy";

/**
 * Allowlist mode (`--allow-host`, `--allow`): the container keeps no network interface but `lo`, and
 * its only way out is harness's gateway, which lets through the hosts named here and records every
 * connection. Entries are checked on names, before any DNS.
 */
export interface EgressRequest {
  /**
   * Allow entries as given: `example.com`, `*.example.org` (any subdomain, not the bare name),
   * `example.com:8443`, an IP literal (`203.0.113.7`, `[2001:db8::1]:443`). Without a port: 443 and 80.
   */
  allowHosts: readonly string[];
  /**
   * Also connect when an allowed name resolves to a loopback, private, link-local or metadata
   * address (internal registries, tests). Off by default: a public name pointed at 169.254.169.254
   * must not reach the cloud's metadata service.
   */
  allowPrivate?: boolean | undefined;
  /** Most bytes (up plus down) the run's connections may carry; default `SANDBOX_DEFAULTS.egressLimitBytes`. */
  limitBytes?: number | undefined;
  /**
   * Most distinct names under one wildcard entry the gateway looks up in the run (each lookup is a
   * DNS query the task chose); default the gateway's `DEFAULT_WILDCARD_NAMES` (64).
   */
  wildcardNames?: number | undefined;
  /**
   * `--secret NAME@HOST`: values read on the host that never enter the sandbox. Each command gets
   * NAME set to a placeholder; the gateway swaps it for the value on requests to HOST only (TLS to
   * HOST is ended at the gateway with a CA made for the run) and refuses it on the way elsewhere.
   */
  secrets?: readonly SecretGrant[] | undefined;
  /**
   * `--allow-request METHODS@HOST/PATH`: an allowed host narrowed to these methods and path
   * prefixes (its TLS ended at the gateway so the requests can be seen). Each HOST must be allowed.
   */
  requestRules?: readonly string[] | undefined;
  /**
   * `--allow npm|pypi|go|cargo|maven`: `KEY=value` variables each command gets, pointing the
   * sandbox's tools at the registries the presets allowed (as the host's configuration names them,
   * credentials left out), so they work with no flag.
   */
  clientEnv?: readonly string[] | undefined;
}

/** `--protect` and `--no-protect`: workspace paths the host runs later, mounted read-only in bind mode. */
export interface ProtectOptions {
  /** `--no-protect`: mount nothing extra; the task may change hooks, git config, `.envrc`… */
  disabled?: boolean | undefined;
  /** `--protect PATH`: more workspace paths to protect, besides the defaults. */
  extraPaths?: readonly string[] | undefined;
}

/** A sandbox for one workspace, as the CLI (or a library caller) asks for it. Left out: the default. */
export interface SandboxRequest {
  /** Host directory of the workspace; must exist. */
  workspace: string;
  /** An existing image instead of harness's own (it only needs /bin/sh). */
  image?: string | undefined;
  /**
   * UID or UID:GID (decimal); default: the workspace owner's. uid 0 and gid 0 are refused in any
   * spelling.
   */
  user?: string | undefined;
  network?: string | undefined;
  memoryBytes?: number | undefined;
  cpus?: number | undefined;
  pidsLimit?: number | undefined;
  tmpSizeMiB?: number | undefined;
  homeSizeMiB?: number | undefined;
  /** OCI runtime, e.g. "runsc" for gVisor. */
  runtime?: string | undefined;
  protect?: ProtectOptions | undefined;
  /**
   * "bind" (default): the workspace is mounted. "copy": it is copied into a throwaway sandbox, and
   * changes come back only through `Sandbox.copy`.
   */
  isolation?: IsolationKind | undefined;
  /**
   * True when the user named the isolation: a remote engine then refuses "bind" instead of
   * switching to "copy" by itself.
   */
  isolationExplicit?: boolean | undefined;
  /** Docker context to use (`--context`); default: DOCKER_HOST, DOCKER_CONTEXT, the current context. */
  dockerContext?: string | undefined;
  /** Copy isolation's size limit. */
  copyLimitBytes?: number | undefined;
  /** Copy isolation's limit on entries (files, directories, symlinks), each way. */
  copyMaxFiles?: number | undefined;
  /** Per-command timeout when a call gives none. */
  timeoutMs?: number | undefined;
  /** Allowlist mode; needs `network` "none" (the default). Absent: no gateway. */
  egress?: EgressRequest | undefined;
  /**
   * `--publish PORT[:HOSTPORT]`: servers on these ports of the sandbox's 127.0.0.1 become reachable
   * on the host's 127.0.0.1 while the sandbox is open; the container still gets no network interface.
   */
  publish?: readonly PublishRequest[] | undefined;
  /**
   * npm's and pip's caches in a volume of this workspace's (and user's) own (package-cache/), with
   * all of the user's caches bounded to `maxBytes` together. Absent: no cache, each sandbox downloads
   * anew (the CLI turns it on by default).
   */
  packageCache?: { maxBytes: number } | undefined;

  /**
   * `--devcontainer`: what harness takes from the workspace's devcontainer.json (src/devcontainer/).
   * It is untrusted input (the sandbox may have written it): it never widens the sandbox.
   */
  devcontainer?: DevcontainerRequest | undefined;
}

/** The parts of a devcontainer.json harness applies, checked (paths inside the workspace). */
export interface DevcontainerRequest {
  /** The devcontainer.json's host path, for messages. */
  file: string;
  /** `image`: an image already on the engine (nothing is pulled). */
  image?: string | undefined;
  /** `build`: a Dockerfile built on the engine without a network. */
  build?: DevcontainerBuild | undefined;
  /** `containerEnv` and `remoteEnv`, as `KEY=value`: added to every command's environment. */
  env: readonly string[];
  /** `remoteUser` (else `containerUser`): a name or uid in the image; never root. */
  user?: string | undefined;
  /** `postCreateCommand` as one shell command line, run once when the container is created. */
  postCreateCommand?: string | undefined;
  /** One line for each field left out, and why. */
  ignored: readonly string[];
}

/** `build` of a devcontainer.json, its paths resolved on the host and inside the workspace. */
export interface DevcontainerBuild {
  /**
   * The workspace's real path when devcontainer.json was read: the context and the Dockerfile lie
   * in it, and the build reads them from it, one component at a time, never following a link.
   */
  workspace: string;
  /** The build context's real host path. */
  context: string;
  /** The Dockerfile's real host path. */
  dockerfile: string;
  /** `build.args`. */
  args: Readonly<Record<string, string>>;
  /** `build.target`: the stage to build. */
  target?: string | undefined;
}

/** One published port: `port` inside the sandbox, `hostPort` on the host's 127.0.0.1. */
export interface PublishRequest {
  port: number;
  hostPort: number;
}
