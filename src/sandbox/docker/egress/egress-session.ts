/**
 * Allowlist mode for one DockerSandbox: the gateway on the host (../../egress/sandbox-gateway.ts), the relay in the
 * container (egress-relay.ts), the proxy variables each command gets (egress-env.ts), and which
 * tool call a connection belongs to. Both ends live exactly as long as this harness process uses
 * the sandbox.
 */
import { dirname } from "node:path";
import createDebug from "debug";
import type Docker from "dockerode";
import { ConfigError } from "../../../errors.js";
import { openHostDir } from "../../../host-files/host-path.js";
import { egressSocketDir } from "../../../state/state-dir.js";
import type { CallTag } from "../../egress/egress-gateway.js";
import { SandboxGateway } from "../../egress/sandbox-gateway.js";
import { trustEnv } from "../../egress/secrets/trust-env.js";
import type { EgressMonitor, ExecResult } from "../../sandbox.js";
import type { EgressRequest, IsolationKind } from "../../sandbox-request.js";
import { parseUserIds } from "../../sandbox-user.js";
import type { DockerSandboxOptions } from "../docker-sandbox-options.js";
import { egressEnv } from "./egress-env.js";
import { EgressRelay } from "./egress-relay.js";
import { EGRESS_MOUNT } from "./egress-relay-script.js";

const log = createDebug("harness:egress");

export class EgressSession {
  private relay: EgressRelay | undefined;

  private constructor(
    private readonly gateway: SandboxGateway,
    /** Host directory of the gateway's socket, bind-mounted read-only at EGRESS_MOUNT. */
    readonly socketDir: string,
    /** "uid:gid" of the sandbox user, whose uid the relay acts with. */
    private readonly user: string,
    /** Who the relay's exec starts as (container-spec.ts: MACHINERY_USER, or the sandbox user). */
    private readonly machineryUser: string,
    /** The presets' variables for the sandbox's tools (EgressRequest.clientEnv). */
    private readonly clientEnv: readonly string[],
  ) {}

  /**
   * Starts the gateway for `workspace` (a real path) in its stable socket directory, the socket
   * owned by the sandbox user. Refuses, in one line, a sandbox user this process cannot hand the
   * socket to.
   */
  static async start(
    egress: EgressRequest,
    options: DockerSandboxOptions,
    workspace: string,
    isolation: IsolationKind,
    user: string,
    /** Who the relay runs as (container-spec.ts: MACHINERY_USER, or the sandbox user). */
    machineryUser: string = user,
  ): Promise<EgressSession> {
    const owner = gatewayOwner(user);
    const socketDir = egressSocketDir(workspace, isolation);
    // Never through a link planted below a workspace (a state directory kept in one): host-files/.
    openHostDir(dirname(socketDir), 0o700).close();
    const gateway = await SandboxGateway.start(egress, options, { socketDir, owner });
    log("gateway on %s", gateway.server.socketPath);
    return new EgressSession(gateway, socketDir, user, machineryUser, egress.clientEnv ?? []);
  }

  /** The gateway, as the rest of harness sees it. */
  get monitor(): EgressMonitor {
    return this.gateway.monitor;
  }

  /** The relay's port, while one was started and not yet closed. */
  get relayPort(): number | undefined {
    return this.relay?.port;
  }

  /**
   * Starts the relay in `container` (after it started, or started again: a restart killed the old
   * one). Rejects with a SandboxError (a RelayStartError) when it cannot.
   */
  async startRelay(container: Docker.Container): Promise<void> {
    await this.closeRelay(500);
    this.relay = await EgressRelay.start(
      container,
      this.user,
      this.machineryUser,
      `${EGRESS_MOUNT}/${this.gateway.server.socketName}`,
    );
  }

  /**
   * Before each command: starts the relay again when it is gone (a command killed it). Returns a
   * notice for the model when it did; rejects when it could not.
   */
  async ensureRelay(container: Docker.Container): Promise<string | undefined> {
    if (this.relay && (await this.relay.running())) return undefined;
    await this.startRelay(container);
    return "the sandbox's network relay had stopped (a command ended it); it was started again before this command, on a new port, and the proxy variables of every command point at it";
  }

  /**
   * The proxy variables for a command, and the presets' variables for its tools: empty when no relay
   * runs (then the command has no network).
   */
  env(): string[] {
    if (!this.relay) return [];
    const trust = this.gateway.server.trustFiles;
    return [
      ...egressEnv(this.relay.port),
      ...this.clientEnv,
      ...(trust === undefined
        ? []
        : trustEnv(`${EGRESS_MOUNT}/${trust.ca}`, `${EGRESS_MOUNT}/${trust.bundle}`)),
      ...this.gateway.server.secretEnv(),
    ];
  }

  /** From now until `endCall`, connections belong to `callId`; the tag collects their denials. */
  beginCall(callId: string | undefined): CallTag {
    return this.gateway.beginCall(callId);
  }

  endCall(): void {
    this.gateway.endCall();
  }

  /** The command's result with its refusals, secrets' values redacted (`SandboxGateway.callResult`). */
  callResult(result: ExecResult, tag: CallTag): ExecResult {
    return this.gateway.callResult(result, tag);
  }

  /** Ends the relay (its stdin closed) and waits for it, briefly. */
  async closeRelay(waitMs?: number): Promise<void> {
    const relay = this.relay;
    this.relay = undefined;
    await relay?.close(waitMs);
  }

  /** Ends both: the relay, then the gateway (which removes its socket). */
  async close(): Promise<void> {
    try {
      await this.closeRelay();
    } finally {
      await this.gateway.server.close();
    }
  }
}

/**
 * The socket must belong to the sandbox user (mode 0600). Only root can give a file away: a harness
 * that is not root can serve only a sandbox running as its own uid.
 */
function gatewayOwner(user: string): { uid: number; gid: number } {
  const ids = parseUserIds(user);
  const self = process.getuid?.();
  if (self !== undefined && self !== 0 && self !== ids.uid) {
    throw new ConfigError(
      `allowlist mode needs the sandbox to run as your own uid (${self}), not ${ids.uid}: harness cannot give its gateway socket to another user; pass --user ${self}:${process.getgid?.() ?? self} or run harness as uid ${ids.uid}`,
    );
  }
  return ids;
}
