import { describe, expect, it, vi } from "vitest";
import { runDockerExec } from "../../../../../src/sandbox/docker/per-call/docker-exec.js";
import type { ExecRequest } from "../../../../../src/sandbox/exec/exec-types.js";
import { execRequest, FakeContainer, type FakeRun } from "../exec/fake-docker.js";

function request(overrides: Partial<ExecRequest> = {}): ExecRequest {
  return execRequest({ command: "yes", killGraceSeconds: 1, ...overrides });
}

/** A promise the test settles by hand. */
function gate(): { promise: Promise<void>; open: () => void; fail: (error: Error) => void } {
  let open = () => {};
  let fail: (error: Error) => void = () => {};
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = reject;
  });
  return { promise, open, fail };
}

/** Waits (by outcome, not by time) until the consumer has made the exec's stream stop flowing. */
const pausedBy = (run: FakeRun) => vi.waitFor(() => expect(run.stream.isPaused()).toBe(true));

describe("runDockerExec with a consumer that asks to wait (backpressure)", () => {
  it("reads nothing more while onOutput's promise is pending, and the rest once it settles", async () => {
    const wait = gate();
    const seen: string[] = [];
    const fake = new FakeContainer((run) => {
      run.stdout("first\n");
      run.stdout("second\n");
      run.stderr("third\n");
      run.stream.write(run.markerFrames(3, "/work"));
    });
    const outcome = runDockerExec(
      fake.container,
      request({
        onOutput: (_name, chunk) => {
          seen.push(chunk.toString());
          return seen.length === 1 ? wait.promise : undefined;
        },
      }),
    );
    await pausedBy(await fake.started);
    expect(seen).toEqual(["first\n"]);
    wait.open();
    const done = await outcome;
    expect(seen).toEqual(["first\n", "second\n", "third\n"]);
    expect(done).toMatchObject({ exitCode: 3, timedOut: false, canceled: false, wrapperLost: false });
    expect(done.stdout.toString()).toBe("first\nsecond\n");
  });

  it("keeps a finished command's last output and exit code while the consumer is slow", async () => {
    const wait = gate();
    const seen: string[] = [];
    const fake = new FakeContainer((run) => {
      run.stdout("built\n");
      run.stdout("tail of the log\n");
      run.stream.write(run.markerFrames(3, "/work"));
      // The wrapper exited: the engine says so while its output still sits unread in the buffers.
      run.finish(0);
    });
    const outcome = runDockerExec(
      fake.container,
      request({
        onOutput: (_name, chunk) => {
          seen.push(chunk.toString());
          return seen.length === 1 ? wait.promise : undefined;
        },
      }),
    );
    const run = await fake.started;
    // Past two polls that said "not running": that must not end the call while the consumer is paused.
    await vi.waitFor(() => expect(run.inspections).toBeGreaterThanOrEqual(2), { timeout: 10_000 });
    expect(seen).toEqual(["built\n"]);
    wait.open();
    const done = await outcome;
    expect(done.exitCode).toBe(3);
    expect(done.wrapperLost).toBe(false);
    expect(seen.join("")).toBe("built\ntail of the log\n");
  });

  it("a rejected or throwing onOutput does not stop reading", async () => {
    let calls = 0;
    const fake = new FakeContainer((run) => {
      run.stdout("a\n");
      run.stdout("b\n");
      run.stdout("c\n");
      run.stream.write(run.markerFrames(0, "/work"));
    });
    const done = await runDockerExec(
      fake.container,
      request({
        onOutput: () => {
          calls += 1;
          if (calls === 1) return Promise.reject(new Error("display failed"));
          if (calls === 2) throw new Error("display failed again");
          return undefined;
        },
      }),
    );
    expect(calls).toBe(3);
    expect(done.stdout.toString()).toBe("a\nb\nc\n");
    expect(done.exitCode).toBe(0);
  });

  it("the timeout kills the command and drains its stream while the consumer never catches up", async () => {
    const seen: string[] = [];
    const fake = new FakeContainer((run) => {
      run.stdout("y\n");
      run.stdout("y\n");
      run.stdout("y\n");
    });
    const done = await runDockerExec(
      fake.container,
      request({
        timeoutMs: 50,
        onOutput: (_name, chunk) => {
          seen.push(chunk.toString());
          return new Promise<void>(() => {});
        },
      }),
    );
    expect(done).toMatchObject({ timedOut: true, canceled: false, killFailed: false });
    expect(fake.killCmds).toHaveLength(1);
    // Once killing, the stream is read to its end (the engine needs that to report the kill's own
    // end); what the stuck consumer was not ready for is dropped, not queued for it.
    expect(seen).toEqual(["y\n"]);
    expect(done.stdout.toString()).toBe("y\ny\ny\n");
  });

  it("an abort while paused kills the command; a consumer that lets go on abort ends it at once", async () => {
    const controller = new AbortController();
    const waits: Array<ReturnType<typeof gate>> = [];
    controller.signal.addEventListener("abort", () => {
      for (const wait of waits) wait.open();
    });
    const fake = new FakeContainer((run) => {
      run.stdout("y\n");
      run.stdout("y\n");
    });
    const outcome = runDockerExec(
      fake.container,
      request({
        signal: controller.signal,
        onOutput: () => {
          // As `harness exec` does: once the reader is gone, output is dropped, never waited for.
          if (controller.signal.aborted) return undefined;
          const wait = gate();
          waits.push(wait);
          return wait.promise;
        },
      }),
    );
    await pausedBy(await fake.started);
    controller.abort();
    const done = await outcome;
    expect(done).toMatchObject({ canceled: true, timedOut: false, killFailed: false });
    expect(fake.killCmds).toHaveLength(1);
  });
});
