import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { ExecOutput } from "../../../src/cli/exec/exec-output.js";

/** A stream that holds every write until the test lets it through, like a pipe nobody reads. */
class HeldStream extends Writable {
  isTTY = false;
  readonly written: string[] = [];
  private readonly held: Array<() => void> = [];
  private reading = false;

  constructor() {
    super({ highWaterMark: 8 });
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    this.written.push(chunk.toString());
    if (this.reading) callback();
    else this.held.push(callback);
  }

  /** The reader starts reading, and takes everything. */
  drainAll(): void {
    this.reading = true;
    for (const callback of this.held.splice(0)) callback();
  }

  /** The reader went away. */
  breakPipe(): void {
    this.destroy(Object.assign(new Error("write EPIPE"), { code: "EPIPE" }));
  }
}

function streams() {
  const stdout = new HeldStream();
  const stderr = new HeldStream();
  return { stdout, stderr, output: new ExecOutput({ stdout, stderr }) };
}

describe("ExecOutput (harness exec's stdout and stderr)", () => {
  it("asks the sandbox to wait once a stream is full, until it drains", async () => {
    const { stdout, output } = streams();
    expect(output.write("stdout", Buffer.from("1234"))).toBeUndefined();
    const wait = output.write("stdout", Buffer.from("56789"));
    expect(wait).toBeInstanceOf(Promise);
    let drained = false;
    void wait?.then(() => {
      drained = true;
    });
    await Promise.resolve();
    expect(drained).toBe(false);
    stdout.drainAll();
    await wait;
    expect(stdout.written.join("")).toBe("123456789");
  });

  it("waits once per full stream, however many chunks come meanwhile", async () => {
    const { stdout, output } = streams();
    const waits = Array.from({ length: 30 }, () => output.write("stdout", Buffer.from("0123456789")));
    expect(new Set(waits).size).toBe(1);
    expect(stdout.listenerCount("drain")).toBe(1);
    stdout.drainAll();
    await waits[0];
    expect(stdout.listenerCount("drain")).toBe(0);
    // Drained: writes go straight through again.
    expect(output.write("stdout", Buffer.from("0123456789"))).toBeUndefined();
  });

  it("aborts when a reader goes away, lets a waiting write go, and writes nothing after", async () => {
    const { stdout, stderr, output } = streams();
    const wait = output.write("stdout", Buffer.from("a long line"));
    expect(output.signal.aborted).toBe(false);
    stdout.breakPipe();
    await wait;
    expect(output.signal.aborted).toBe(true);
    expect(output.broken).toBe(true);
    expect(output.write("stderr", Buffer.from("more"))).toBeUndefined();
    expect(stderr.written).toEqual([]);
    // stderr still works for harness's own notes.
    output.note("the sandbox was restarted");
    expect(stderr.written).toEqual(["harness: the sandbox was restarted\n"]);
  });

  it("a broken stderr takes harness's own notes too, and later errors do not throw", async () => {
    const { stderr, output } = streams();
    stderr.breakPipe();
    await new Promise((resolve) => stderr.once("close", resolve));
    expect(output.signal.aborted).toBe(true);
    output.note("not shown");
    expect(() => stderr.emit("error", new Error("write EPIPE"))).not.toThrow();
    expect(stderr.written).toEqual([]);
  });

  it("shows control characters as escapes on a terminal, and keeps piped bytes exact", () => {
    const { stdout, stderr, output } = streams();
    stdout.isTTY = true;
    output.write("stdout", Buffer.from("a\u001b]0;title\u0007b\n"));
    output.write("stderr", Buffer.from("a\u001b[2Jb\n"));
    expect(stdout.written).toEqual(["a\\x1b]0;title\\x07b\n"]);
    expect(stderr.written).toEqual(["a\u001b[2Jb\n"]);
  });

  it("lets a command's plain colour through to a colour terminal, and resets one left open at the end", () => {
    const stdout = new HeldStream();
    const stderr = new HeldStream();
    stdout.isTTY = true;
    stdout.drainAll();
    const output = new ExecOutput({ stdout, stderr }, { FORCE_COLOR: "1" });
    output.write("stdout", Buffer.from("\u001b[3"));
    output.write("stdout", Buffer.from("1mFAIL\u001b[0m \u001b[32mok\u001b]0;t\u0007\n"));
    output.finish();
    expect(stdout.written.join("")).toBe("\u001b[31mFAIL\u001b[0m \u001b[32mok\\x1b]0;t\\x07\n\u001b[0m");
  });

  it("drops a command's colour on a terminal that wants none (NO_COLOR), and piped bytes stay exact", () => {
    const { stdout, stderr, output } = streams();
    stdout.isTTY = true;
    stdout.drainAll();
    stderr.drainAll();
    const env = { NO_COLOR: "1" };
    const plain = new ExecOutput({ stdout, stderr }, env);
    plain.write("stdout", Buffer.from("\u001b[31mred\u001b[0m\n"));
    output.write("stderr", Buffer.from("\u001b[31mred\n"));
    plain.finish();
    expect(stdout.written.join("")).toBe("red\n");
    expect(stderr.written.join("")).toBe("\u001b[31mred\n");
  });

  it("shows a note's control characters as escapes, on one line", () => {
    const { stderr, output } = streams();
    output.note("processes still running: sh -c 'x\u001b]0;t\u0007\nharness: all clear\u202e'");
    expect(stderr.written).toEqual([
      "harness: processes still running: sh -c 'x\\x1b]0;t\\x07\\nharness: all clear\\u202e'\n",
    ]);
  });
});
