import { EventEmitter } from "node:events";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { exitCodeForEnd } from "../../../../src/cli/exit-codes.js";
import { Interrupts } from "../../../../src/cli/session/interrupts.js";
import { type ProcessLike, watchProcessEnds } from "../../../../src/cli/session/process-ends.js";
import { causeName, type EndCause, SessionEnd } from "../../../../src/cli/session/session-end.js";

function session() {
  const said: string[] = [];
  const exits: EndCause[] = [];
  const end = new SessionEnd({ exit: (cause) => exits.push(cause), say: (line) => said.push(line) });
  return { end, said, exits };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe("SessionEnd", () => {
  it("the first cause aborts the signal and stays the cause; later ones are told the end goes on", () => {
    const { end, said } = session();
    end.end({ kind: "signal", signal: "SIGTERM" });
    expect(end.signal.aborted).toBe(true);
    end.end({ kind: "signal", signal: "SIGHUP" });
    end.end({ kind: "signal", signal: "SIGINT" });
    expect(end.cause).toEqual({ kind: "signal", signal: "SIGTERM" });
    expect(said).toEqual([
      "SIGTERM: ending the session (the running command is stopped, then the sandbox)",
      "SIGHUP: the session is already ending (stopping the sandbox's processes, moving planted git files aside); it is not cut short",
    ]);
  });

  it("a file that could not be written (a full disk) ends the session with one line naming it, exit 1", () => {
    const { end, said } = session();
    const cause: EndCause = { kind: "write", path: "/state/runs/r.jsonl", code: "ENOSPC" };
    end.end(cause);
    expect(end.signal.aborted).toBe(true);
    expect(said).toEqual([
      "/state/runs/r.jsonl could not be written (ENOSPC): ending the session (the running command is stopped, then the sandbox)",
    ]);
    expect(exitCodeForEnd(cause)).toBe(1);
    expect(causeName(cause)).toBe("write-failed");
  });

  it("says nothing when the reader of stdout went away, nor on a stderr that failed", () => {
    const one = session();
    one.end.end({ kind: "output", stream: "stdout", code: "EPIPE" });
    expect(one.said).toEqual([]);
    const two = session();
    two.end.end({ kind: "output", stream: "stderr", code: "EPIPE" });
    expect(two.said).toEqual([]);
    expect(two.end.stderrGone).toBe(true);
    const full = session();
    full.end.end({ kind: "output", stream: "stdout", code: "ENOSPC" });
    expect(full.said[0]).toMatch(/^stdout failed \(ENOSPC\): ending the session/);
  });

  it("runs a held end once, whoever asks first, and no longer holds it after", async () => {
    const { end } = session();
    let runs = 0;
    let finish: () => void = () => {};
    const held = end.hold("stopping the sandbox", () => {
      runs += 1;
      return new Promise<void>((resolve) => {
        finish = resolve;
      });
    });
    const first = held.end();
    const second = held.end();
    expect(runs).toBe(1);
    expect(end.holding).toEqual(["stopping the sandbox"]);
    finish();
    await Promise.all([first, second]);
    expect(end.holding).toEqual([]);
    await held.end();
    expect(runs).toBe(1);
  });

  it("an error nobody caught runs every held end, newest first, then exits with the first cause", async () => {
    const { end, exits } = session();
    const order: string[] = [];
    end.hold("stopping the sandbox", async () => {
      await flush();
      order.push("sandbox");
    });
    end.hold("the transcript's run_end", () => {
      order.push("transcript");
    });
    const released = end.hold("released", () => {
      order.push("released");
    });
    released.release();
    end.end({ kind: "signal", signal: "SIGTERM" });
    expect(exits).toEqual([]);
    end.end({ kind: "crash", error: new Error("boom") });
    await expect.poll(() => exits.length).toBe(1);
    expect(order).toEqual(["transcript", "sandbox"]);
    expect(exits[0]).toEqual({ kind: "signal", signal: "SIGTERM" });
  });

  it("a held end that fails does not stop the others, and a second crash does not start another end", async () => {
    const { end, exits, said } = session();
    const order: string[] = [];
    end.hold("stopping the sandbox", () => {
      order.push("sandbox");
    });
    end.hold("the checkpoints", () => {
      throw new Error("disk gone");
    });
    end.end({ kind: "crash", error: new Error("first") });
    end.end({ kind: "crash", error: new Error("second") });
    await expect.poll(() => exits.length).toBe(1);
    await flush();
    expect(exits).toHaveLength(1);
    expect(order).toEqual(["sandbox"]);
    expect(said).toContain("ending the session: the checkpoints failed: disk gone");
    expect(said[0]).toMatch(/^internal error: first; ending the session/);
  });

  it("a forced end waits for a held end already under way (a sandbox stopping), never cutting it short", async () => {
    const { end, exits } = session();
    let finish: () => void = () => {};
    const held = end.hold("stopping the sandbox", () => new Promise<void>((resolve) => (finish = resolve)));
    void held.end();
    end.end({ kind: "crash", error: new Error("boom") });
    await flush();
    expect(exits).toEqual([]);
    finish();
    await expect.poll(() => exits.length).toBe(1);
  });
});

describe("watchProcessEnds", () => {
  function fakeProcess() {
    const streams = { stdout: new PassThrough(), stderr: new PassThrough() };
    return Object.assign(new EventEmitter(), streams) as EventEmitter & ProcessLike & typeof streams;
  }

  it.each([
    ["SIGTERM", "SIGTERM"],
    ["SIGHUP", "SIGHUP"],
  ])("%s ends the session", (signal, name) => {
    const proc = fakeProcess();
    const { end } = session();
    watchProcessEnds(end, proc);
    proc.emit(signal);
    expect(end.cause && causeName(end.cause)).toBe(name);
  });

  it.each([
    ["stdout", "EPIPE", "stdout-closed", 141],
    ["stderr", "EPIPE", "stderr-closed", 141],
    ["stdout", "ENOSPC", "stdout-failed", 1],
  ] as const)("an error on %s (%s) ends the session as %s, exit %d", (stream, code, name, exit) => {
    const proc = fakeProcess();
    const { end } = session();
    watchProcessEnds(end, proc);
    proc[stream].emit("error", Object.assign(new Error(code), { code }));
    expect(end.cause && causeName(end.cause)).toBe(name);
    expect(end.cause && exitCodeForEnd(end.cause)).toBe(exit);
  });

  it("an uncaught exception forces the end and exits 1", async () => {
    const proc = fakeProcess();
    const { end, exits } = session();
    watchProcessEnds(end, proc);
    proc.emit("uncaughtException", new Error("a writer failed"));
    await expect.poll(() => exits.length).toBe(1);
    expect(exitCodeForEnd(exits[0] as EndCause)).toBe(1);
    expect(causeName(exits[0] as EndCause)).toBe("internal-error");
  });

  it("signals exit 128 + their number", () => {
    expect(exitCodeForEnd({ kind: "signal", signal: "SIGHUP" })).toBe(129);
    expect(exitCodeForEnd({ kind: "signal", signal: "SIGINT" })).toBe(130);
    expect(exitCodeForEnd({ kind: "signal", signal: "SIGTERM" })).toBe(143);
  });
});

describe("Interrupts", () => {
  it("the first Ctrl-C cancels the running work only; the second ends the session", () => {
    const { end } = session();
    const stderr = new PassThrough();
    const interrupts = new Interrupts(end, stderr, false);
    const work = interrupts.begin();
    interrupts.press();
    expect(work.aborted).toBe(true);
    expect(end.cause).toBeUndefined();
    interrupts.press();
    expect(end.cause).toEqual({ kind: "signal", signal: "SIGINT" });
  });

  it("a Ctrl-C with nothing running ends the session; work begun after the end is aborted at once", () => {
    const { end } = session();
    const interrupts = new Interrupts(end, new PassThrough(), false);
    interrupts.press();
    expect(interrupts.ending).toBe(true);
    expect(interrupts.begin().aborted).toBe(true);
  });

  it("the session's end aborts the work under way", () => {
    const { end } = session();
    const interrupts = new Interrupts(end, new PassThrough(), false);
    const work = interrupts.begin();
    end.end({ kind: "signal", signal: "SIGHUP" });
    expect(work.aborted).toBe(true);
  });
});
