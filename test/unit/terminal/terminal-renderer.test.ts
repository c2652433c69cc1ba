import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import type { AgentRunResult } from "../../../src/agent/agent-types.js";
import { createTerminalRenderer } from "../../../src/terminal/terminal-renderer.js";
import { fixture } from "../../support/agent-fixture.js";
import { FakeSandbox, makeExecResult } from "../../support/fake-sandbox.js";
import { answer, bash, text, toolCalls } from "../../support/scripted-model.js";

function capture() {
  const writes: string[] = [];
  const out = new Writable({
    write(chunk, _encoding, done) {
      writes.push(String(chunk));
      done();
    },
  });
  return { out, writes, text: () => writes.join("") };
}

const ESC = "\u001b";
const endResult: AgentRunResult = {
  status: "submitted",
  messages: [],
  turns: 3,
  usage: { inputTokens: 1200, outputTokens: 340, cacheReadInputTokens: 5000, cacheCreationInputTokens: 800 },
  finalText: "",
};

describe("createTerminalRenderer", () => {
  it("streams assistant text as it arrives, sanitised", () => {
    const { out, writes, text: printed } = capture();
    const renderer = createTerminalRenderer({ out, color: false });
    renderer.onText?.("Hel");
    renderer.onText?.(`lo${ESC}]0;pwned\u0007!`);
    expect(writes).toEqual(["Hel", "lo\\x1b]0;pwned\\x07!"]);
    renderer.onAssistantTurn?.({} as never);
    expect(printed()).toBe("Hello\\x1b]0;pwned\\x07!\n");
  });

  it("shows a command as `$ cmd` in colour, on its own line", () => {
    const { out, text: printed } = capture();
    const renderer = createTerminalRenderer({ out, color: true });
    renderer.onText?.("Let me look.");
    renderer.onToolCall?.({ id: "t", name: "bash", input: { command: `ls -la${ESC}[2J` } });
    expect(printed()).toBe(`Let me look.\n${ESC}[33m$ ls -la\\x1b[2J${ESC}[39m\n`);
  });

  it("shows the first lines of output, sanitised (colour dropped without colour), then a status line", () => {
    const { out, text: printed } = capture();
    const renderer = createTerminalRenderer({ out, color: false, previewLines: 3 });
    const exec = makeExecResult({
      stdout: `one\n${ESC}[31mtwo${ESC}[0m\nthree${ESC}[2K\nfour\nfive\n`,
      stderr: "warn\n",
      durationMs: 1530,
    });
    renderer.onToolResult?.(
      { id: "t", name: "bash", input: {} },
      { toolUseId: "t", content: "", isError: false, exec },
    );
    expect(printed()).toBe("  one\n  two\n  three\\x1b[2K\n  … 3 more lines\n✓ exit 0 · 1.5s\n");
  });

  it("keeps a command's colours on a colour terminal, closes one left open, and escapes the rest", () => {
    const { out, text: printed } = capture();
    const renderer = createTerminalRenderer({ out, color: true, previewLines: 8 });
    const call = { id: "t", name: "bash", input: {} };
    renderer.onToolOutput?.(call, "stdout", Buffer.from(`${ESC}[1;31mFAIL${ESC}[0m a.test\n${ESC}[32mok`));
    renderer.onToolOutput?.(
      call,
      "stdout",
      Buffer.from(` b.test\n${ESC}]0;title${ESC}\\${ESC}[1A\u009b31m\n`),
    );
    renderer.onToolResult?.(call, { toolUseId: "t", content: "", isError: false, exec: makeExecResult({}) });
    const lines = printed().split("\n");
    expect(lines[0]).toBe(`${ESC}[2m  ${ESC}[1;31mFAIL${ESC}[0m a.test${ESC}[22m`);
    expect(lines[1]).toBe(`${ESC}[2m  ${ESC}[32mok b.test${ESC}[0m${ESC}[22m`);
    expect(lines[2]).toBe(`${ESC}[2m  \\x1b]0;title\\x1b\\\\x1b[1A\\x9b31m${ESC}[22m`);
  });

  it("marks failures, timeouts, truncation, OOM and notices in the status line", () => {
    const { out, text: printed } = capture();
    const renderer = createTerminalRenderer({ out, color: false });
    const exec = makeExecResult({
      exitCode: undefined,
      timedOut: true,
      isTruncated: true,
      oomKilled: true,
      stdoutBytes: 2_000_000,
      notices: ["sandbox restarted"],
      durationMs: 120_000,
    });
    renderer.onToolResult?.(
      { id: "t", name: "bash", input: {} },
      { toolUseId: "t", content: "", isError: true, exec },
    );
    expect(printed()).toBe(
      "✗ exit none · 2m00s · timed out · killed: out of memory · output truncated (1.9 MiB total) · sandbox restarted\n",
    );
  });

  it("shows a result without a command (blocked, unknown tool) as its first line", () => {
    const { out, text: printed } = capture();
    const renderer = createTerminalRenderer({ out, color: false });
    renderer.onToolResult?.(
      { id: "t", name: "bash", input: {} },
      { toolUseId: "t", content: 'Blocked: this command was not run (rule "x").\nmore', isError: true },
    );
    expect(printed()).toBe('✗ Blocked: this command was not run (rule "x").\n');
  });

  it("shows other tools' calls with their input", () => {
    const { out, text: printed } = capture();
    createTerminalRenderer({ out, color: false }).onToolCall?.({
      id: "t",
      name: "read",
      input: { path: "a" },
    });
    expect(printed()).toBe('→ read {"path":"a"}\n');
  });

  it("ends with a summary: status, turns and tokens", () => {
    const { out, text: printed } = capture();
    const renderer = createTerminalRenderer({ out, color: false });
    renderer.onNotice?.("Stopped: reached the turn limit.");
    renderer.onRunEnd?.(endResult);
    expect(printed()).toBe(
      "! Stopped: reached the turn limit.\nsubmitted · 3 turns · tokens: 1,200 input, 5,000 cache read, 800 cache write, 340 output\n",
    );
  });

  it("adds the error to the summary", () => {
    const { out, text: printed } = capture();
    const renderer = createTerminalRenderer({ out, color: false });
    renderer.onRunEnd?.({
      ...endResult,
      status: "error",
      turns: 1,
      error: new Error("529 overloaded") as never,
    });
    expect(printed()).toContain("error · 1 turn · ");
    expect(printed()).toContain("\nError: 529 overloaded\n");
  });

  it("prints no escape sequence from the sandbox or the model during a real run", async () => {
    const evil = `${ESC}]52;c;cm0gLXJmIH4=\u0007${ESC}[2J${ESC}c\u009b31mred\u202eevil`;
    const { out, text: printed } = capture();
    const sandbox = new FakeSandbox([{ stdout: evil, stderr: evil, notices: [evil] }]);
    const { run } = fixture([toolCalls(text(evil), bash("t", `echo ${evil}`)), answer(evil)], {
      sandbox,
      events: createTerminalRenderer({ out, color: false }),
    });
    await run();
    expect(printed()).toContain("$ echo ");
    expect([...printed()].filter((char) => char === ESC || /[\u0080-\u009f\u202e]/.test(char))).toEqual([]);
  });
});

describe("createTerminalRenderer: thinking and the context window", () => {
  it("shows thinking dimmed, on one line, cut short; the answer on the next", () => {
    const { out, text: printed } = capture();
    const renderer = createTerminalRenderer({ out, color: true });
    renderer.onThinking?.("First I will\nlist ", true);
    renderer.onThinking?.("x".repeat(400), false);
    renderer.onText?.("Listing.");
    renderer.onAssistantTurn?.({} as never);
    const lines = printed().split("\n");
    expect(lines[0]).toMatch(
      new RegExp(`^${ESC}\\[2m✻ ${ESC}\\[22m${ESC}\\[2mFirst I will list ${ESC}\\[22m`),
    );
    expect(lines[0]?.replaceAll(`${ESC}[2m`, "").replaceAll(`${ESC}[22m`, "")).toHaveLength(2 + 160 + 1);
    expect(lines[0]?.endsWith(`…${ESC}[22m`)).toBe(true);
    expect(lines[1]).toBe("Listing.");
  });

  it("says what a context edit did, in one line each", () => {
    const { out, text: printed } = capture();
    const renderer = createTerminalRenderer({ out, color: false });
    renderer.onContextEdit?.({ kind: "compaction", by: "server", droppedMessages: 40, contextTokens: 3120 });
    renderer.onContextEdit?.({
      kind: "clear_tool_results",
      cleared: [{ toolUseId: "t1", placeholder: "…" }],
      tokensBefore: 150_000,
      tokensAfter: 90_000,
    });
    expect(printed()).toBe(
      "! context: the API compacted the conversation (40 earlier messages now stand as its summary; the context is 3,120 tokens)\n" +
        "! context: cleared 1 old tool result(s), about 150,000 → 90,000 tokens (their text stays readable with read_output)\n",
    );
  });
});
