/**
 * Runs items with at most `concurrency` at once, in file order. Stops starting when the signal
 * aborts (Ctrl-C, SIGTERM) or `mayStart` says no (the batch budget); items already running go on
 * with the same signal, which is theirs to end cleanly. No item's failure ends the pool.
 */

export interface PoolOptions<T> {
  /** What to run, in order. */
  items: readonly T[];
  /** Most items running at once (at least 1). */
  concurrency: number;
  /** Aborted: no new item starts. */
  signal: AbortSignal;
  /** Asked before each start; false stops starting (running items go on). */
  mayStart?: (() => boolean) | undefined;
  /** Runs one item. A rejection is handed to `onCrash`, never thrown out of the pool. */
  run: (item: T) => Promise<void>;
  /** Called when `run` rejected (a bug: tasks turn their own failures into results). */
  onCrash: (item: T, error: unknown) => void;
}

/** How the pool ended. */
export interface PoolOutcome {
  /** Items started. */
  started: number;
  /** Why items were left: all ran, the signal aborted, or `mayStart` said no. */
  stoppedBy: "done" | "signal" | "budget";
}

export async function runPool<T>(options: PoolOptions<T>): Promise<PoolOutcome> {
  const { items, signal } = options;
  let next = 0;
  let stoppedBy: PoolOutcome["stoppedBy"] = "done";
  const takeNext = (): T | undefined => {
    if (next >= items.length || stoppedBy !== "done") return undefined;
    if (signal.aborted) {
      stoppedBy = "signal";
      return undefined;
    }
    if (options.mayStart && !options.mayStart()) {
      stoppedBy = "budget";
      return undefined;
    }
    const item = items[next];
    next += 1;
    return item;
  };
  const worker = async () => {
    for (let item = takeNext(); item !== undefined; item = takeNext()) {
      try {
        await options.run(item);
      } catch (error) {
        options.onCrash(item, error);
      }
    }
  };
  const workers = Math.max(1, Math.min(options.concurrency, items.length));
  await Promise.all(Array.from({ length: workers }, worker));
  if (stoppedBy === "done" && next < items.length && signal.aborted) stoppedBy = "signal";
  return { started: next, stoppedBy };
}
