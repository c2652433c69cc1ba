import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { LiveOutput } from "../../../src/terminal/live-output.js";
import { createTerminalRenderer } from "../../../src/terminal/terminal-renderer.js";
import type { ToolCall } from "../../../src/tools/tool.js";
import { makeExecResult } from "../../support/fake-sandbox.js";

function collect(maxLines: number) {
  const lines: string[] = [];
  const live = new LiveOutput(maxLines, (stream, line) => lines.push(`${stream}:${line}`));
  return { live, lines };
}

describe("LiveOutput", () => {
  it("emits whole lines as they complete, from both streams in arrival order", () => {
    const { live, lines } = collect(10);
    live.push("stdout", Buffer.from("compil"));
    expect(lines).toEqual([]);
    live.push("stdout", Buffer.from("ing\nlinking\n"));
    live.push("stderr", Buffer.from("warning: x\n"));
    expect(lines).toEqual(["stdout:compiling", "stdout:linking", "stderr:warning: x"]);
    live.push("stdout", Buffer.from("done"));
    expect(live.finish()).toEqual({ more: false });
    expect(lines.at(-1)).toBe("stdout:done");
  });

  it("joins a character split between chunks", () => {
    const { live, lines } = collect(10);
    const bytes = Buffer.from("é€😀\n");
    for (let i = 0; i < bytes.length; i++) live.push("stdout", bytes.subarray(i, i + 1));
    expect(lines).toEqual(["stdout:é€😀"]);
  });

  it("stops at the line limit and says there was more", () => {
    const { live, lines } = collect(2);
    live.push("stdout", Buffer.from("1\n2\n3\n4\n"));
    live.push("stdout", Buffer.alloc(1024 * 1024, 120));
    expect(lines).toEqual(["stdout:1", "stdout:2"]);
    expect(live.finish()).toEqual({ more: true });
  });
});

describe("terminal renderer with live output", () => {
  it("shows a command's first lines while it runs, sanitised, then only its status", () => {
    const writes: string[] = [];
    const out = new Writable({
      write(chunk, _encoding, done) {
        writes.push(String(chunk));
        done();
      },
    });
    const renderer = createTerminalRenderer({ out, color: false, previewLines: 2 });
    const call: ToolCall = { id: "t1", name: "bash", input: { command: "make" } };
    renderer.onToolCall?.(call);
    renderer.onToolOutput?.(call, "stdout", Buffer.from("step 1\u001b]0;pwned\u0007\n"));
    expect(writes.join("")).toBe("$ make\n  step 1\\x1b]0;pwned\\x07\n");
    renderer.onToolOutput?.(call, "stderr", Buffer.from("oops\nstep 3\n"));
    const exec = makeExecResult({
      command: "make",
      stdout: "step 1\nstep 3\n",
      stderr: "oops\n",
      exitCode: 2,
    });
    renderer.onToolResult?.(call, { toolUseId: "t1", content: "", isError: true, exec });
    const printed = writes.join("");
    expect(printed).toMatch(/^\$ make\n {2}step 1\\x1b\]0;pwned\\x07\n {2}oops\n {2}…\n✗ exit 2 · /);
    // Nothing shown twice: the preview of the finished result is not printed again.
    expect(printed.match(/step 1/g)).toHaveLength(1);
  });
});
