/**
 * One connection through the gateway that got past the allowlist: its timers (idle, total), its byte
 * counts, the streams to destroy when it is cut short, and its record, emitted exactly once when it
 * ends however it ends.
 */
import { Transform } from "node:stream";
import type { EgressRecord } from "../sandbox.js";
import type { CallTag } from "./gateway-options.js";

/** What the client asked for, and when. */
export interface ConnectionStart {
  /** The host as the client gave it (made printable). */
  host: string;
  port: number;
  /** "CONNECT" or the HTTP method. */
  method: string;
  /** The command running when it opened. */
  tag: CallTag | undefined;
  /** A name under a wildcard entry that this request is the first to have looked up in the run. */
  lookedUp?: string | undefined;
}

/** The gateway's side of a connection. */
export interface ConnectionHooks {
  idleMs: number;
  maxConnectionMs: number;
  /** Takes `bytes` from the run's budget; false when that would overspend it (the gateway then ends every connection). */
  spend(bytes: number): boolean;
  /** Called once, when the connection has ended. */
  ended(connection: EgressConnection, record: EgressRecord): void;
}

export class EgressConnection {
  readonly start: ConnectionStart;
  readonly #hooks: ConnectionHooks;
  readonly #time = new Date().toISOString();
  readonly #opened = performance.now();
  readonly #idle: NodeJS.Timeout;
  readonly #lifetime: NodeJS.Timeout;
  readonly #cleanups: Array<() => void> = [];
  #bytesUp = 0;
  #bytesDown = 0;
  #allowed = true;
  #address: string | undefined;
  #status: number | undefined;
  #reason: string | undefined;
  #ended = false;
  #secrets: string[] | undefined;

  constructor(start: ConnectionStart, hooks: ConnectionHooks) {
    this.start = start;
    this.#hooks = hooks;
    // The idle clock runs from the start, so a slow DNS answer or origin handshake counts as idle too.
    this.#idle = setTimeout(() => this.abort("idle"), hooks.idleMs).unref();
    this.#lifetime = setTimeout(
      () => this.abort(`open longer than the limit of ${hooks.maxConnectionMs} ms`),
      hooks.maxConnectionMs,
    ).unref();
  }

  get ended(): boolean {
    return this.#ended;
  }

  get bytesUp(): number {
    return this.#bytesUp;
  }

  get bytesDown(): number {
    return this.#bytesDown;
  }

  /** The origin address it connected to. */
  connectedTo(address: string): void {
    this.#address = address;
  }

  /** The HTTP status the client got. */
  answered(status: number): void {
    this.#status = status;
  }

  /** The `--secret` names this request carried (their values, put in by the gateway), for the record. */
  carried(secrets: readonly string[]): void {
    if (secrets.length > 0) this.#secrets = [...secrets];
  }

  /** Turns it into a refusal (an address the policy forbids): recorded as not allowed. */
  refused(reason: string): void {
    this.#allowed = false;
    this.#reason ??= reason;
  }

  /** Why an allowed connection ended early (the first reason wins). */
  note(reason: string): void {
    this.#reason ??= reason;
  }

  /** Registers what to destroy when the connection is cut short. */
  onAbort(cleanup: () => void): void {
    if (this.#ended) cleanup();
    else this.#cleanups.push(cleanup);
  }

  /**
   * Takes bytes that pass no counter (a CONNECT's request head, the gateway's answer to it) from the
   * run's budget; false when that would overspend it. They are not the origin's, so not in the record.
   */
  charge(bytes: number): boolean {
    return !this.#ended && this.#hooks.spend(bytes);
  }

  /**
   * A pass-through that counts the bytes of one direction against the budget and keeps the
   * connection from going idle. A chunk that would overspend the budget is not passed on.
   */
  counter(direction: "up" | "down"): Transform {
    return new Transform({
      transform: (chunk: Buffer, _encoding, callback) => {
        if (this.#ended || !this.#hooks.spend(chunk.length)) return callback();
        if (direction === "up") this.#bytesUp += chunk.length;
        else this.#bytesDown += chunk.length;
        this.#idle.refresh();
        callback(null, chunk);
      },
    });
  }

  /** Cuts it short: records `reason` (unless one is already there), destroys its streams, ends. */
  abort(reason: string): void {
    if (this.#ended) return;
    this.note(reason);
    for (const cleanup of this.#cleanups.splice(0)) {
      try {
        cleanup();
      } catch {
        // Destroying an already-destroyed stream may throw; the connection is over either way.
      }
    }
    this.finish();
  }

  /** Ends it (idempotent) and emits its record. */
  finish(): void {
    if (this.#ended) return;
    this.#ended = true;
    clearTimeout(this.#idle);
    clearTimeout(this.#lifetime);
    // Cleanups are for cutting short only: a finished plain-HTTP request leaves its client connection open.
    this.#cleanups.length = 0;
    const { host, port, method, tag, lookedUp } = this.start;
    this.#hooks.ended(this, {
      time: this.#time,
      callId: tag?.callId,
      host,
      port,
      method,
      allowed: this.#allowed,
      reason: this.#reason,
      address: this.#address,
      status: this.#status,
      ...(lookedUp === undefined ? {} : { lookedUp }),
      ...(this.#secrets === undefined ? {} : { secrets: this.#secrets }),
      bytesUp: this.#bytesUp,
      bytesDown: this.#bytesDown,
      durationMs: Math.round(performance.now() - this.#opened),
    });
  }
}
