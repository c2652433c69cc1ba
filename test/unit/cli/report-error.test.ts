import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { reportError } from "../../../src/cli/report-error.js";
import { HarnessError, SandboxError } from "../../../src/errors.js";

function stderr(): { stream: Writable; text: () => string } {
  let text = "";
  const stream = new Writable({
    write(chunk, _encoding, done) {
      text += String(chunk);
      done();
    },
  });
  return { stream, text: () => text };
}

describe("reportError", () => {
  it("shows the control characters of a message that quotes the sandbox as escapes, on one line", () => {
    const err = stderr();
    const name = "a\u001b]52;c;ZXZpbA==\u0007\u001b[1A\u001b[2K\u009b2J\u202eb\u200b";
    reportError(new HarnessError(`cannot read '${name}'`), err.stream);
    expect(err.text()).toBe(
      "harness: cannot read 'a\\x1b]52;c;ZXZpbA==\\x07\\x1b[1A\\x1b[2K\\x9b2J\\u202eb\\u200b'\n",
    );
  });

  it("keeps to the first line of the message", () => {
    const err = stderr();
    reportError(
      new SandboxError("exec failed: x\u001b]0;t\u0007\nharness: all clear", { containerId: "c1" }),
      err.stream,
    );
    expect(err.text()).toBe("harness: exec failed: x\\x1b]0;t\\x07\n");
  });

  it("gives a plain object's message (a WebSocket error event), never [object Object]", () => {
    const err = stderr();
    reportError({ type: "error", message: "Unexpected server response: 500" }, err.stream);
    expect(err.text()).toBe(
      "harness: internal error: Unexpected server response: 500 (set DEBUG=harness:* for details)\n",
    );
    const other = stderr();
    reportError({ code: 7 }, other.stream);
    expect(other.text()).toBe('harness: internal error: {"code":7} (set DEBUG=harness:* for details)\n');
  });
});

describe("reportError after `await using` suppressed an error", () => {
  it("reports the body's error, not 'An error was suppressed during disposal'", () => {
    const err = stderr();
    const body = new SandboxError("the Docker engine went away (connect ECONNREFUSED /x.sock) while y");
    const disposal = Object.assign(new Error("connect ECONNREFUSED /x.sock"), { code: "ECONNREFUSED" });
    // What the bundle's `await using` helper throws where Node has no SuppressedError (Node 20).
    const suppressed = Object.assign(new Error("An error was suppressed during disposal"), {
      name: "SuppressedError",
      error: disposal,
      suppressed: body,
    });
    const code = reportError(suppressed, err.stream);
    expect(err.text()).toBe("harness: the Docker engine went away (connect ECONNREFUSED /x.sock) while y\n");
    expect(code).toBe(1);
  });
});
