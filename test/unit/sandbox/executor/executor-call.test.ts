import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { ExecutorCall } from "../../../../src/sandbox/executor/executor-call.js";

const NONCE = "00112233445566aa";

function call(onOutput?: (stream: "stdout" | "stderr", chunk: Buffer) => void | Promise<void>) {
  const stream = new PassThrough();
  return { stream, call: new ExecutorCall(NONCE, { headBytes: 1024, tailBytes: 1024, onOutput }, stream) };
}

const frame = (kind: string, payload: string, nonce = NONCE) => ({
  kind,
  nonce,
  payload: Buffer.from(payload),
});

describe("ExecutorCall", () => {
  it("keeps this call's output apart by stream and ends on its end frame", async () => {
    const { call: c } = call();
    c.onFrame(frame("S", '{"pid":7,"start":100}'));
    c.onFrame(frame("o", "out\n"));
    c.onFrame(frame("e", "err\n"));
    c.onFrame(frame("X", '{"code":3,"oom":0,"background":0,"cwd":"/tmp","survivors":[]}'));
    expect(await c.whenStarted(1000)).toEqual({ kind: "started", started: { pid: 7, start: 100 } });
    expect(await c.whenEnded()).toMatchObject({ kind: "end", end: { code: 3, cwd: "/tmp" } });
    expect([c.stdout.toString(), c.stderr.toString()]).toEqual(["out\n", "err\n"]);
  });

  it("drops frames of another nonce, so another call's output or end cannot land here", async () => {
    const { call: c } = call();
    c.onFrame(frame("o", "not mine", "ffffffffffffffff"));
    c.onFrame(frame("X", '{"code":0,"oom":0,"background":0,"cwd":"/","survivors":[]}', "ffffffffffffffff"));
    c.onFrame(frame("o", "mine"));
    c.onLost();
    expect(await c.whenEnded()).toEqual({ kind: "lost" });
    expect(c.stdout.toString()).toBe("mine");
  });

  it("answers 'silent' when no start comes in time, and 'failed' when the executor could not fork", async () => {
    expect(await call().call.whenStarted(10)).toEqual({ kind: "silent" });
    const { call: c } = call();
    c.onFrame(frame("F", '{"error":"BlockingIOError: Resource temporarily unavailable"}'));
    expect(await c.whenStarted(1000)).toEqual({
      kind: "failed",
      why: "BlockingIOError: Resource temporarily unavailable",
    });
    expect(await c.whenEnded()).toEqual({ kind: "lost" });
  });

  it("pauses the executor's stream while the consumer is behind, and never leaves it paused after the call", async () => {
    let release = () => {};
    const { call: c, stream } = call(() => new Promise<void>((resolve) => (release = resolve)));
    c.onFrame(frame("o", "chunk"));
    expect(stream.isPaused()).toBe(true);
    c.flow.detach();
    expect(stream.isPaused()).toBe(false);
    release();
  });
});
