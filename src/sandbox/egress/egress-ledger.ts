/**
 * The gateway's books: the byte budget of the run, the counts so far, the hosts reached, and the
 * records handed to subscribers (whose exceptions never reach the gateway).
 */
import type { EgressRecord } from "../sandbox.js";
import type { CallTag } from "./gateway-options.js";

export interface EgressTotals {
  allowed: number;
  denied: number;
  bytesUp: number;
  bytesDown: number;
  /** Distinct hosts connected to, canonical (lower-case names, canonical IP literals). */
  hosts: string[];
}

export class EgressLedger {
  readonly limitBytes: number;
  readonly #listeners = new Set<(record: EgressRecord) => void>();
  readonly #hosts = new Set<string>();
  readonly #counts = { allowed: 0, denied: 0, bytesUp: 0, bytesDown: 0 };
  #bytesUsed = 0;
  /** Applied to each record's texts before anyone sees it (a secret's value, in any form, taken out). */
  readonly #redact: ((text: string) => string) | undefined;

  constructor(limitBytes: number, redact?: (text: string) => string) {
    this.limitBytes = limitBytes;
    this.#redact = redact;
  }

  /** True once the budget is used up: new connections are refused. */
  get spent(): boolean {
    return this.#bytesUsed >= this.limitBytes;
  }

  /** The refusal reason once the budget is spent. */
  get limitReason(): string {
    return `egress limit of ${this.limitBytes} bytes reached (--egress-limit)`;
  }

  /** True when `bytes` more fit in what is left of the budget. */
  fits(bytes: number): boolean {
    return this.#bytesUsed + bytes <= this.limitBytes;
  }

  /** Takes `bytes` from the budget; false (and the budget spent) when that would overspend it. */
  spend(bytes: number): boolean {
    if (this.#bytesUsed + bytes <= this.limitBytes) {
      this.#bytesUsed += bytes;
      return true;
    }
    this.#bytesUsed = this.limitBytes;
    return false;
  }

  subscribe(listener: (record: EgressRecord) => void): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  reached(host: string): void {
    this.#hosts.add(host);
  }

  /** Records a request refused before it became a connection. */
  refused(
    tag: CallTag | undefined,
    request: { host: string; port: number; method: string },
    status: number,
    reason: string,
    secrets?: string[] | undefined,
  ): void {
    this.#counts.denied += 1;
    this.#emit({
      time: new Date().toISOString(),
      callId: tag?.callId,
      ...request,
      allowed: false,
      reason,
      status,
      ...(secrets === undefined ? {} : { secrets }),
      bytesUp: 0,
      bytesDown: 0,
      durationMs: 0,
    });
  }

  /** Records a connection that has ended. */
  ended(record: EgressRecord): void {
    if (record.allowed) this.#counts.allowed += 1;
    else this.#counts.denied += 1;
    this.#counts.bytesUp += record.bytesUp;
    this.#counts.bytesDown += record.bytesDown;
    this.#emit(record);
  }

  /** The counts so far, with the bytes of connections still open added. */
  totals(open: Iterable<{ bytesUp: number; bytesDown: number }>): EgressTotals {
    let { bytesUp, bytesDown } = this.#counts;
    for (const connection of open) {
      bytesUp += connection.bytesUp;
      bytesDown += connection.bytesDown;
    }
    return { ...this.#counts, bytesUp, bytesDown, hosts: [...this.#hosts] };
  }

  #emit(given: EgressRecord): void {
    const redact = this.#redact;
    const record =
      redact === undefined
        ? given
        : {
            ...given,
            host: redact(given.host),
            ...(given.reason === undefined ? {} : { reason: redact(given.reason) }),
            ...(given.lookedUp === undefined ? {} : { lookedUp: redact(given.lookedUp) }),
          };
    for (const listener of this.#listeners) {
      try {
        listener(record);
      } catch {
        // Contract: listeners must not throw; one that does must not stop the others or the gateway.
      }
    }
  }
}
