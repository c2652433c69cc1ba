/**
 * What the CONNECT and plain-HTTP handlers need from the gateway: the checks every request goes
 * through in order (allowlist on the name, budget, capacity; then addresses; then the origin), with
 * each refusal recorded as it happens.
 */
import type { Socket } from "node:net";
import type { EgressConnection } from "./egress-connection.js";
import type { RequestRules } from "./request-rules.js";
import type { SecretBook } from "./secrets/secret-book.js";

export type Admission =
  | { ok: true; connection: EgressConnection }
  | { ok: false; status: 403 | 503; reason: string };

export type Reach =
  | { ok: true; socket: Socket; address: string }
  | { ok: false; status: number; reason: string };

export interface GatewayCore {
  /**
   * The allowlist decision on the name as given, then the byte budget (`headBytes`, what the request
   * costs before any body, must fit in what is left: if not, the budget is spent), the connection
   * limit, and the bound on distinct names looked up under a wildcard entry. A refusal is recorded
   * (and told to the running command) before this returns.
   */
  admit(host: string, port: number, method: string, headBytes: number): Admission;
  /**
   * Resolves an admitted host, checks its addresses and connects to one. A failure is noted on the
   * connection (which the caller still finishes) and returned as the status and words to answer with.
   */
  reach(connection: EgressConnection): Promise<Reach>;
  /** Records a request the gateway could not read or does not serve (answered 400). */
  malformed(host: string, method: string, reason: string): void;
  /** The run's `--secret`s, when there are any. */
  readonly secrets: SecretBook | undefined;
  /** The `--allow-request` rules, when there are any. */
  readonly rules: RequestRules | undefined;
  /** Trust for terminated hosts' origins; undefined: Node's own (with NODE_EXTRA_CA_CERTS). */
  readonly upstreamCa: readonly string[] | undefined;
  /** True when the gateway ends TLS itself for CONNECTs to `host:port` (a secret or a rule is for it). */
  terminates(host: string, port: number): boolean;
  /** Takes a CONNECT's client socket, already answered 200, and speaks TLS to it as `host`. */
  terminate(client: Socket, host: string, port: number): void;
  /**
   * Records a request refused for what it is or carries (no request rule allows it; a secret's
   * placeholder to the wrong host), and tells the running command; `secret` is a name, never a value.
   */
  refuseContent(host: string, port: number, method: string, reason: string, secret?: string): void;
}
