/**
 * The batch's warm pool, without Docker: while tasks run, the sandboxes of the next ones are made
 * ahead (how is injected: `warm`, warm/warm-container.ts in production), at most `size` of them
 * waiting at once. A task that starts takes its own, waiting for it if it is still being made; at the
 * end (all done, Ctrl-C, the budget) every one no task took is discarded, after those still being
 * made are finished. The first `concurrency` tasks start at once, so they are never warmed ahead.
 */

/** Removes what a warm-up made; resolves in every case. */
export type Discard = () => Promise<void>;

export interface WarmAheadOptions<T> {
  /** The tasks this batch will start, in the order they start. */
  items: readonly T[];
  /** Tasks started at once at the beginning (the batch's concurrency): not warmed. */
  concurrency: number;
  /** Most warmed tasks waiting for their start at once; 0 turns the pool off. */
  size: number;
  /**
   * Makes `item`'s sandbox ahead of its start: resolves with how to discard it, or undefined when
   * there is nothing to warm (or to discard). A rejection is ignored: the task's own start does the
   * work again and reports the failure.
   */
  warm: (item: T) => Promise<Discard | undefined>;
}

export class WarmAhead<T> {
  private readonly index = new Map<T, number>();
  /** Warm-ups begun and not yet taken, by item index. */
  private readonly waiting = new Map<number, Promise<Discard | undefined>>();
  /** Every warm-up begun: awaited at `close`. */
  private readonly begun: Promise<unknown>[] = [];
  /** The next item to warm. */
  private next: number;
  private closed = false;

  constructor(private readonly options: WarmAheadOptions<T>) {
    options.items.forEach((item, i) => {
      this.index.set(item, i);
    });
    this.next = options.concurrency;
  }

  /** Warms the first ones, ahead of any start (the pool is full before the first task ends). */
  fill(): void {
    const { items, size } = this.options;
    while (!this.closed && this.waiting.size < size && this.next < items.length) {
      const i = this.next;
      this.next += 1;
      const item = items[i] as T;
      const made = this.options.warm(item).catch(() => undefined);
      this.waiting.set(i, made);
      this.begun.push(made);
    }
  }

  /**
   * `item` is starting: resolves once its warm-up (if one was begun) has ended, with how to discard
   * what it made, for a task that then fails before its sandbox took it over (the task's sandbox
   * otherwise removes it at its end). Warms the next ones in its place.
   */
  async take(item: T): Promise<Discard | undefined> {
    const i = this.index.get(item);
    if (i === undefined) return undefined;
    // Started before its turn came to be warmed: never warmed afterwards.
    if (this.next <= i) this.next = i + 1;
    const own = this.waiting.get(i);
    this.waiting.delete(i);
    this.fill();
    return own;
  }

  /** No more warm-ups; those begun end, and every one no task took is discarded. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.begun);
    const left = [...this.waiting.values()];
    this.waiting.clear();
    for (const made of left) await (await made)?.();
  }
}
