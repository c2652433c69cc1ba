import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { watchIgnoredStdin } from "../../../src/cli/exec/ignored-stdin.js";

/** A pipe as process.stdin is when input is piped in. */
function pipe(tty = false): PassThrough & NodeJS.ReadStream {
  return Object.assign(new PassThrough(), { isTTY: tty }) as unknown as PassThrough & NodeJS.ReadStream;
}

describe("harness exec's ignored stdin", () => {
  it("is reported when input arrived, and not when the pipe was empty", async () => {
    const piped = pipe();
    const watch = watchIgnoredStdin(piped);
    piped.write("data for the command\n");
    await new Promise((resolve) => setImmediate(resolve));
    expect(watch.stop()).toBe(true);
    expect(piped.destroyed).toBe(true);

    const empty = pipe();
    const quiet = watchIgnoredStdin(empty);
    empty.end();
    await new Promise((resolve) => setImmediate(resolve));
    expect(quiet.stop()).toBe(false);
  });

  it("reads nothing past the first chunk, and never watches a terminal", async () => {
    const piped = pipe();
    watchIgnoredStdin(piped);
    piped.write("a");
    await new Promise((resolve) => setImmediate(resolve));
    piped.write("b");
    expect(piped.isPaused()).toBe(true);
    expect(piped.read()?.toString()).toBe("b");

    const terminal = pipe(true);
    terminal.write("typed");
    expect(watchIgnoredStdin(terminal).stop()).toBe(false);
    expect(terminal.destroyed).toBe(false);
  });
});
