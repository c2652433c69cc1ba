/**
 * One backoff for every task of a batch: a 429 or 529 (the API's rate limit and overload) answered to
 * any task holds every task's next request until the wait the API asked for has passed, instead of
 * each task hammering the API with its own retries. Waiters go in the order they came (FIFO), so the
 * request that was refused first is the first to go again.
 */
import { CanceledError } from "../errors.js";

/** Clock and timers, for tests. */
export interface BackoffClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

const REAL_CLOCK: BackoffClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

interface Waiter {
  resolve: () => void;
  reject: (error: Error) => void;
  signal: AbortSignal | undefined;
  onAbort: () => void;
}

export class SharedBackoff {
  #notBefore = 0;
  #waiters: Waiter[] = [];
  #timer: unknown;
  #pauses = 0;
  #pausedMs = 0;

  constructor(private readonly clock: BackoffClock = REAL_CLOCK) {}

  /** Pauses so far (one per refused request). */
  get pauses(): number {
    return this.#pauses;
  }

  /** Milliseconds every task was held, summed over pauses that did not overlap. */
  get pausedMs(): number {
    return this.#pausedMs;
  }

  /** True while requests are held. */
  get paused(): boolean {
    return this.clock.now() < this.#notBefore;
  }

  /**
   * Holds every request for `ms` from now. A shorter pause than the one running changes nothing: the
   * API's longest wait wins.
   */
  pause(ms: number): void {
    this.#pauses += 1;
    const until = this.clock.now() + Math.max(0, ms);
    if (until <= this.#notBefore) return;
    this.#pausedMs += until - Math.max(this.#notBefore, this.clock.now());
    this.#notBefore = until;
    this.#schedule();
  }

  /**
   * Resolves when a request may go: at once when nothing is held and nobody waits, else in turn.
   * Rejects with CanceledError when `signal` aborts first.
   */
  ready(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(new CanceledError("the model request was canceled"));
    if (this.#waiters.length === 0 && !this.paused) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        signal,
        onAbort: () => {
          this.#waiters = this.#waiters.filter((w) => w !== waiter);
          reject(new CanceledError("the model request was canceled"));
        },
      };
      signal?.addEventListener("abort", waiter.onAbort, { once: true });
      this.#waiters.push(waiter);
      this.#schedule();
    });
  }

  #schedule(): void {
    if (this.#timer !== undefined) this.clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#waiters.length === 0) return;
    const wait = this.#notBefore - this.clock.now();
    this.#timer = this.clock.setTimeout(() => this.#release(), Math.max(0, wait));
  }

  #release(): void {
    this.#timer = undefined;
    if (this.paused) {
      this.#schedule();
      return;
    }
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiters) {
      waiter.signal?.removeEventListener("abort", waiter.onAbort);
      waiter.resolve();
    }
  }
}
