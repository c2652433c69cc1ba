import { describe, expect, it } from "vitest";
import { type Discard, WarmAhead } from "../../../src/batch/warm-ahead.js";

/** A warm pool over items 0..n-1 whose warm-ups are resolved (or rejected) by the test. */
function pool(n: number, concurrency: number, size: number) {
  const items = Array.from({ length: n }, (_, i) => i);
  const warmed: number[] = [];
  const discarded: number[] = [];
  const finish = new Map<number, (outcome: "made" | "nothing" | "failed") => void>();
  const ahead = new WarmAhead<number>({
    items,
    concurrency,
    size,
    warm: (item) => {
      warmed.push(item);
      return new Promise<Discard | undefined>((resolve, reject) => {
        finish.set(item, (outcome) => {
          if (outcome === "failed") reject(new Error(`warm ${item} failed`));
          else
            resolve(
              outcome === "made"
                ? async () => {
                    discarded.push(item);
                  }
                : undefined,
            );
        });
      });
    },
  });
  const end = (item: number, outcome: "made" | "nothing" | "failed" = "made") => finish.get(item)?.(outcome);
  return { ahead, warmed, discarded, end };
}

describe("WarmAhead (the batch's warm pool)", () => {
  it("never warms the tasks that start at once, and keeps at most `size` waiting", () => {
    const { ahead, warmed } = pool(10, 3, 2);
    ahead.fill();
    expect(warmed).toEqual([3, 4]);
    ahead.fill();
    expect(warmed).toEqual([3, 4]);
  });

  it("a starting task takes its own warm-up (waiting for it) and the next one is warmed in its place", async () => {
    const { ahead, warmed, end, discarded } = pool(10, 2, 2);
    ahead.fill();
    void ahead.take(0);
    void ahead.take(1);
    expect(warmed).toEqual([2, 3]);
    let taken = false;
    const own = ahead.take(2).then((discard) => {
      taken = true;
      return discard;
    });
    expect(warmed).toEqual([2, 3, 4]);
    await Promise.resolve();
    expect(taken).toBe(false);
    end(2);
    const discard = await own;
    expect(taken).toBe(true);
    // Taken: the task's to remove should it fail before its sandbox took it over, never the pool's.
    for (const i of [3, 4]) end(i);
    await ahead.close();
    expect(discarded.sort()).toEqual([3, 4]);
    await discard?.();
    expect(discarded).toContain(2);
  });

  it("close waits for warm-ups still being made and discards every one no task took", async () => {
    const { ahead, warmed, end, discarded } = pool(8, 1, 3);
    ahead.fill();
    expect(warmed).toEqual([1, 2, 3]);
    end(1);
    end(2, "nothing");
    let closed = false;
    const closing = ahead.close().then(() => {
      closed = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(closed).toBe(false);
    end(3);
    await closing;
    expect(discarded.sort()).toEqual([1, 3]);
    // Closed: nothing more is warmed.
    ahead.fill();
    expect(warmed).toEqual([1, 2, 3]);
  });

  it("a failed warm-up is ignored: its task starts as if nothing had been warmed", async () => {
    const { ahead, end } = pool(4, 1, 1);
    ahead.fill();
    end(1, "failed");
    await expect(ahead.take(1)).resolves.toBeUndefined();
    end(2, "failed");
    await ahead.close();
  });

  it("a task that starts before its turn to be warmed is not warmed afterwards; size 0 warms nothing", async () => {
    const { ahead, warmed } = pool(6, 1, 1);
    void ahead.take(0);
    // take(0) filled the pool with task 1; task 3 starts out of turn (the pool runs tasks in order,
    // but a skipped index must never be warmed later).
    void ahead.take(3);
    expect(warmed).toEqual([1]);
    const off = pool(6, 1, 0);
    off.ahead.fill();
    void off.ahead.take(1);
    expect(off.warmed).toEqual([]);
  });
});
