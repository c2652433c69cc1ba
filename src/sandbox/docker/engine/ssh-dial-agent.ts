/**
 * ssh:// engines the way the docker CLI reaches them (docker/cli `cli/connhelper`): each HTTP
 * connection is an `ssh … docker system dial-stdio` process (ssh-dial-args.ts, ssh-connection.ts).
 * The system's ssh, its config, keys and agent are used as they are; no ssh2 in the bundle
 * (scripts/build.mjs stubs it out). Loaded only for an ssh:// endpoint.
 */
import { spawn } from "node:child_process";
import { Agent, type ClientRequestArgs } from "node:http";
import type { Duplex } from "node:stream";
import { SshConnection, SshConnectionError } from "./ssh-connection.js";
import { SSH_CONNECT_TIMEOUT_S, sshDialArgs } from "./ssh-dial-args.js";

/**
 * After a connection found the host not answering, how long new connections fail at once with that
 * error instead of each waiting out ssh's timeout again. A dropped command is followed by several
 * calls in a row (is the exec still running, how did it end, is the container up, revive it): without
 * this hold each one paid the full connect timeout, and a drop took minutes to be reported.
 */
const UNANSWERED_HOLD_MS = SSH_CONNECT_TIMEOUT_S * 1000;

/** An HTTP agent whose every connection is a `docker system dial-stdio` over ssh. */
export class SshDialAgent extends Agent {
  private readonly args: string[];
  private unanswered: { error: SshConnectionError; until: number } | undefined;

  /**
   * `host` is the ssh:// URL (throws when it is not a usable one); `env` is the ssh process's
   * environment (PATH finds `ssh`, SSH_AUTH_SOCK reaches the user's agent).
   */
  constructor(
    private readonly host: string,
    private readonly env: NodeJS.ProcessEnv,
  ) {
    // Kept alive: every new connection costs an ssh handshake and a `docker` start on the far side.
    super({ keepAlive: true });
    this.args = sshDialArgs(host);
  }

  override createConnection(
    _options: ClientRequestArgs,
    callback?: (error: Error | null, socket: Duplex) => void,
  ): Duplex | undefined {
    const held = this.unanswered;
    if (held !== undefined && Date.now() < held.until && callback !== undefined) {
      const error = new SshConnectionError(
        `${held.error.message} (not tried again for ${UNANSWERED_HOLD_MS / 1000} s)`,
        held.error.exitCode,
        held.error.signal,
      );
      process.nextTick(() => callback(error, undefined as unknown as Duplex));
      return undefined;
    }
    const child = spawn("ssh", this.args, { env: this.env, stdio: ["pipe", "pipe", "pipe"] });
    const connection = new SshConnection(child, this.host);
    connection.on("error", (error) => {
      if (!(error instanceof SshConnectionError && error.unanswered)) return;
      this.unanswered = { error, until: Date.now() + UNANSWERED_HOLD_MS };
      // The idle connections go to the same host: each would be found dead in turn by its own
      // keepalive, one call at a time.
      for (const sockets of Object.values(this.freeSockets))
        for (const socket of sockets ?? []) socket.destroy();
    });
    return connection;
  }
}
