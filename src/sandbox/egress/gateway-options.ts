/** How the gateway is started, and how it learns which command is running. */
import type { EgressDenial } from "../sandbox.js";
import type { Lookup } from "./policy/destination.js";
import type { SecretGrant } from "./secrets/secret-grant.js";

/** The command running now, as the sandbox tags it: records carry its callId; refusals are pushed to `denied`. */
export interface CallTag {
  callId: string | undefined;
  denied: EgressDenial[];
}

export interface GatewayOptions {
  /**
   * Directory to listen in. Created 0700 if missing; if it exists it must be a real directory (not a
   * symlink) owned by us, root or `owner`, with no group/other write, else SandboxError. Stale
   * sockets of dead harness processes in it are unlinked, never connected to.
   */
  socketDir: string;
  /**
   * Owner to give the directory and socket (chown) so the sandbox user can connect; mode 0700 dir /
   * 0600 socket. Absent: leave ownership as is.
   */
  owner?: { uid: number; gid: number } | undefined;
  /** Raw `--allow-host` entries; a bad one is a ConfigError. */
  allowHosts: readonly string[];
  /** Also connect to loopback, private and link-local addresses (never metadata ones reached by name). */
  allowPrivate: boolean;
  /** Most bytes, up plus down, all connections together may carry over the gateway's life. */
  limitBytes: number;
  /** Most tunnels and forwarded requests open at once. */
  maxConnections: number;
  /** A connection with no byte either way for this long is closed. */
  idleMs: number;
  /** Longest life of one connection. */
  maxConnectionMs: number;
  /**
   * Most distinct names under one wildcard entry (`*.example.org`) the gateway looks up in its life;
   * a new name beyond that is refused before DNS. Default `DEFAULT_WILDCARD_NAMES` (64).
   */
  wildcardNames?: number | undefined;
  /** Resolver; default: `dns.promises.lookup(host, { all: true, verbatim: true })`. */
  lookup?: Lookup | undefined;
  /** The call running now (read when a connection opens). Contract: should not throw. */
  currentCall?: (() => CallTag | undefined) | undefined;
  /**
   * `--secret NAME@HOST` grants: the gateway terminates TLS for each HOST with a CA made for the run,
   * puts the value in place of NAME's placeholder on requests to HOST, and refuses the placeholder
   * anywhere else. Each HOST must also be an allow entry.
   */
  secrets?: readonly SecretGrant[] | undefined;
  /**
   * `--allow-request METHODS@HOST/PATH` rules (request-rules.ts): a host with rules takes only the
   * requests one of them allows, and its TLS is ended at the gateway. Each HOST must be allowed.
   */
  requestRules?: readonly string[] | undefined;
  /**
   * Certificates (PEM) to verify the origins of terminated hosts against, instead of Node's store
   * (which honours NODE_EXTRA_CA_CERTS). For tests with self-signed origins.
   */
  upstreamCa?: readonly string[] | undefined;
  /** A client that has not sent a whole request head within this long is dropped. Default 10 s. */
  headersTimeoutMs?: number | undefined;
}
