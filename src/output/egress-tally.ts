/**
 * Allowlist mode's records summed up: for the json result's `egress` counts and the text summary.
 * Hosts are the sandbox's own words (what it asked a CONNECT for), so callers escape them for display.
 */
import type { EgressRecord } from "../sandbox/sandbox.js";

/** `egress` in the result object (docs/output-formats.md). */
export interface EgressCounts {
  /** Connections (and plain-HTTP requests) the gateway saw, refused ones included. */
  connections: number;
  /** How many of them it refused. */
  denied: number;
  /** Bytes from the sandbox to the origins. */
  bytes_up: number;
  /** Bytes from the origins to the sandbox. */
  bytes_down: number;
  /** `host:port` reached (allowed connections), sorted; at most `MAX_LISTED`. */
  hosts: string[];
  /** `host:port` refused, sorted; at most `MAX_LISTED`. */
  denied_hosts: string[];
}

/** One allowed `host:port` and what went through it. */
export interface HostTraffic {
  /** `host:port`. */
  target: string;
  connections: number;
  bytesUp: number;
  bytesDown: number;
}

/** One refused `host:port`, with the first refusal's reason. */
export interface HostDenial {
  /** `host:port`. */
  target: string;
  /** How many requests to it were refused. */
  count: number;
  reason: string;
}

/** Hosts listed at most in the result: a sandbox trying thousands must not blow up one JSON line. */
const MAX_LISTED = 100;

export class EgressTally {
  #connections = 0;
  #denied = 0;
  #bytesUp = 0;
  #bytesDown = 0;
  readonly #reached = new Map<string, HostTraffic>();
  readonly #refused = new Map<string, HostDenial>();

  add(record: EgressRecord): void {
    this.#connections += 1;
    this.#bytesUp += record.bytesUp;
    this.#bytesDown += record.bytesDown;
    const target = `${hostForDisplay(record.host)}:${record.port}`;
    if (!record.allowed) {
      this.#denied += 1;
      const denial = this.#refused.get(target);
      if (denial === undefined)
        this.#refused.set(target, { target, count: 1, reason: record.reason ?? "refused" });
      else denial.count += 1;
      return;
    }
    const traffic = this.#reached.get(target) ?? { target, connections: 0, bytesUp: 0, bytesDown: 0 };
    traffic.connections += 1;
    traffic.bytesUp += record.bytesUp;
    traffic.bytesDown += record.bytesDown;
    this.#reached.set(target, traffic);
  }

  /** Nothing was recorded yet. */
  get empty(): boolean {
    return this.#connections === 0;
  }

  get connections(): number {
    return this.#connections;
  }

  get bytesUp(): number {
    return this.#bytesUp;
  }

  get bytesDown(): number {
    return this.#bytesDown;
  }

  /** Allowed hosts, most bytes first. */
  reached(): HostTraffic[] {
    return [...this.#reached.values()].sort(
      (a, b) => b.bytesUp + b.bytesDown - (a.bytesUp + a.bytesDown) || a.target.localeCompare(b.target),
    );
  }

  /** Refused hosts, in the order they were first refused. */
  refused(): HostDenial[] {
    return [...this.#refused.values()];
  }

  counts(): EgressCounts {
    const sorted = (keys: Iterable<string>) => [...keys].sort().slice(0, MAX_LISTED);
    return {
      connections: this.#connections,
      denied: this.#denied,
      bytes_up: this.#bytesUp,
      bytes_down: this.#bytesDown,
      hosts: sorted(this.#reached.keys()),
      denied_hosts: sorted(this.#refused.keys()),
    };
  }
}

/** An IPv6 literal in brackets, so `host:port` reads unambiguously. */
function hostForDisplay(host: string): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}
