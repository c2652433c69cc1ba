import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ModelError } from "../../../src/errors.js";
import { createTranscript, scrubSecrets } from "../../../src/transcript/transcript.js";
import { fixture } from "../../support/agent-fixture.js";
import { FakeSandbox } from "../../support/fake-sandbox.js";
import { answer, bash, toolCalls } from "../../support/scripted-model.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "harness-transcript-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

type Row = Record<string, unknown> & { type: string; time: string };
const read = (path: string): Row[] =>
  readFileSync(path, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Row);

describe("createTranscript", () => {
  it("records a run as JSONL, one record per step", async () => {
    const path = join(dir, "nested", "run.jsonl");
    const sandbox = new FakeSandbox([{ stdout: "a.txt\n", stderr: "warn\n", exitCode: 0, durationMs: 42 }]);
    const { run } = fixture([toolCalls(bash("t1", "ls")), answer("Done.")], {
      sandbox,
      events: createTranscript(path),
    });
    await run("List files.");

    const rows = read(path);
    expect(rows.map((row) => row.type)).toEqual([
      "run_start",
      "user",
      "usage",
      "assistant",
      "tool_call",
      "tool_result",
      "usage",
      "assistant",
      "run_end",
    ]);
    for (const row of rows) expect(Number.isNaN(Date.parse(row.time))).toBe(false);
    expect(rows[0]).toMatchObject({ task: "List files.", tools: ["bash"], limits: { maxTurns: 10 } });
    expect(rows[1]).toMatchObject({ text: "List files." });
    expect(rows[3]).toMatchObject({ stopReason: "tool_use", model: "claude-test" });
    expect(rows[4]).toMatchObject({ id: "t1", name: "bash", input: { command: "ls" } });
    expect(rows[5]).toMatchObject({
      id: "t1",
      isError: false,
      command: "ls",
      stdout: "a.txt\n",
      stderr: "warn\n",
      exitCode: 0,
      durationMs: 42,
      timedOut: false,
      truncated: false,
    });
    expect(rows.at(-1)).toMatchObject({ type: "run_end", status: "submitted", turns: 2, finalText: "Done." });
  });

  it("has each step on disk before the next one starts", async () => {
    const path = join(dir, "run.jsonl");
    const onDisk: string[][] = [];
    const sandbox = new FakeSandbox(() => {
      onDisk.push(read(path).map((row) => row.type));
      return {};
    });
    const { run } = fixture(
      [
        toolCalls(bash("t1", "ls")),
        () => {
          onDisk.push(read(path).map((row) => row.type));
          return answer("ok");
        },
      ],
      { sandbox, events: createTranscript(path) },
    );
    await run();
    expect(onDisk[0]?.at(-1)).toBe("tool_call");
    expect(onDisk[1]?.at(-1)).toBe("tool_result");
  });

  it("keeps what happened when the run fails midway, and records the failure", async () => {
    const path = join(dir, "run.jsonl");
    const failure = new ModelError("500 internal error", { status: 500, requestID: "req_9" });
    const { run } = fixture([toolCalls(bash("t1", "ls")), failure], { events: createTranscript(path) });
    const result = await run();
    expect(result.status).toBe("error");
    const rows = read(path);
    expect(rows.map((row) => row.type)).toContain("tool_result");
    expect(rows.at(-1)).toMatchObject({
      type: "run_end",
      status: "error",
      error: { name: "ModelError", message: "500 internal error", status: 500, requestID: "req_9" },
    });
  });

  it("records what ended the session in run_end, once per run", async () => {
    const path = join(dir, "run.jsonl");
    let endedBy: string | undefined;
    const transcript = createTranscript(path, { endedBy: () => endedBy });
    const { run } = fixture([answer("First."), answer("Second.")], { events: transcript });
    await run("one");
    endedBy = "SIGTERM";
    await run("two");
    // A run_end for a run that has one already is dropped (an unfinished run's end came first).
    const usage = { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
    transcript.onRunEnd({ status: "canceled", messages: [], turns: 0, usage, finalText: "" });
    const ends = read(path).filter((row) => row.type === "run_end");
    expect(ends).toHaveLength(2);
    expect(ends[0]).not.toHaveProperty("endedBy");
    expect(ends[1]).toMatchObject({ status: "submitted", endedBy: "SIGTERM" });
  });

  it("ends a run the loop could not finish with what it recorded so far, then records nothing more", async () => {
    const path = join(dir, "run.jsonl");
    const transcript = createTranscript(path, { endedBy: () => "internal-error" });
    transcript.onRunStart({
      task: "t",
      system: "s",
      tools: ["bash"],
      limits: { maxTurns: 5, maxTokens: 100 },
    });
    const usage = { inputTokens: 10, outputTokens: 5, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
    transcript.onAssistantTurn({
      id: "msg_1",
      model: "m",
      stopReason: "tool_use",
      content: [{ type: "text", text: "hi", citations: null }],
      usage,
    });
    transcript.onTurnUsage(usage, usage);
    transcript.endUnfinished("error", new Error("a writer failed"));
    transcript.onNotice("after the end");
    const rows = read(path);
    expect(rows.at(-1)).toMatchObject({
      type: "run_end",
      status: "error",
      turns: 1,
      usage,
      endedBy: "internal-error",
      error: { message: "a writer failed" },
    });
    // Nothing open: a second call writes nothing.
    transcript.endUnfinished("error");
    expect(read(path)).toHaveLength(rows.length);
  });

  it("never writes API keys or auth header values", async () => {
    const path = join(dir, "run.jsonl");
    const key = "sk-ant-api03-AbC_dEf-123456789";
    const sandbox = new FakeSandbox([
      { stdout: `ANTHROPIC_API_KEY=${key}\nx-api-key: secret-one\nAuthorization: Bearer secret-two\n` },
    ]);
    const { run } = fixture([toolCalls(bash("t1", `echo ${key}`)), answer(`Your key is ${key}`)], {
      sandbox,
      events: createTranscript(path),
    });
    await run();
    const written = readFileSync(path, "utf8");
    for (const secret of [key, "secret-one", "secret-two", "AbC_dEf"]) expect(written).not.toContain(secret);
    expect(written).toContain("sk-ant-[REDACTED]");
    expect(written).toContain("x-api-key: [REDACTED]");
  });

  it("keeps signed blocks verbatim, withholds one holding an API key, and marks what masking changed", () => {
    const path = join(dir, "run.jsonl");
    const transcript = createTranscript(path);
    const key = "sk-ant-api03-AbC_dEf-123456789";
    const usage = { inputTokens: 1, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
    const thinking = { type: "thinking", thinking: "Send Authorization: Bearer x.", signature: "sig_1" };
    const compaction = {
      type: "compaction",
      content: "Summary: set x-api-key: y.",
      encrypted_content: "e",
      signature: "c",
      tool_changes: [{ type: "tool_addition", tool: { type: "tool_reference", name: "authorization" } }],
    };
    transcript.onUserMessage("Use Authorization: Bearer tok-1");
    transcript.onAssistantTurn({
      id: "msg_1",
      model: "claude-x",
      stopReason: "tool_use",
      usage,
      content: [
        compaction,
        thinking,
        { type: "thinking", thinking: `The key is ${key}.`, signature: "sig_2" },
        { type: "redacted_thinking", data: `opaque ${key}` },
        { type: "text", text: "Calling with x-api-key: abc", citations: null },
        { type: "tool_use", id: "t1", name: "bash", input: { command: "true" } },
      ] as never,
    });
    transcript.onToolResult(
      { id: "t1", name: "bash", input: {} },
      { toolUseId: "t1", content: "fine", isError: false },
    );
    const written = readFileSync(path, "utf8");
    expect(written).not.toContain(key);
    // The writer's field order (`harness runs` reads the model from a record's first bytes).
    expect(written).toContain('{"type":"assistant","time":');
    expect(written).toMatch(/\{"type":"assistant","time":"[^"]*","id":"msg_1","model":"claude-x"/);
    const [user, assistant, result] = read(path);
    expect(user).toMatchObject({ text: "Use Authorization: [REDACTED]", masked: true });
    expect(assistant?.["content"]).toEqual([
      compaction,
      thinking,
      { type: "withheld", block: "thinking", reason: "it held an Anthropic API key" },
      { type: "withheld", block: "redacted_thinking", reason: "it held an Anthropic API key" },
      { type: "text", text: "Calling with x-api-key: [REDACTED]", citations: null },
      { type: "tool_use", id: "t1", name: "bash", input: { command: "true" } },
    ]);
    expect(assistant?.["maskedBlocks"]).toEqual([4]);
    expect(result).not.toHaveProperty("masked");
  });

  it("names the command of a call that was not run", async () => {
    const path = join(dir, "run.jsonl");
    const { run } = fixture([toolCalls(bash("t1", "sudo ls")), answer("ok")], {
      events: createTranscript(path),
    });
    await run();
    const row = read(path).find((candidate) => candidate.type === "tool_result");
    expect(row).toMatchObject({ id: "t1", isError: true, command: "sudo ls" });
    expect(row?.["content"]).toMatch(/^Blocked: /);
  });

  it("does not throw when the file cannot be written", () => {
    const transcript = createTranscript("/dev/null/cannot/exist.jsonl");
    expect(() => transcript.onNotice("hello")).not.toThrow();
  });

  it("uses the injected clock", () => {
    const path = join(dir, "run.jsonl");
    createTranscript(path, { now: () => new Date("2025-01-02T03:04:05.000Z") }).onNotice("x");
    expect(read(path)).toEqual([{ type: "notice", time: "2025-01-02T03:04:05.000Z", text: "x" }]);
  });
});

describe("scrubSecrets", () => {
  it("redacts keys in strings and secret-named fields, at any depth", () => {
    expect(
      scrubSecrets({
        headers: { "x-api-key": "k1", Authorization: "Bearer k2", accept: "json" },
        list: ["token sk-ant-xyz-1", { apiKey: "k3" }],
        json: '{"authorization":"Bearer k4"}',
      }),
    ).toEqual({
      headers: { "x-api-key": "[REDACTED]", Authorization: "[REDACTED]", accept: "json" },
      list: ["token sk-ant-[REDACTED]", { apiKey: "[REDACTED]" }],
      json: '{"authorization":"[REDACTED]"}',
    });
  });

  it("copes with cycles, repeated objects and errors", () => {
    const shared = { n: 1 };
    const cyclic: Record<string, unknown> = { a: shared, b: shared };
    cyclic["self"] = cyclic;
    expect(scrubSecrets(cyclic)).toEqual({ a: { n: 1 }, b: { n: 1 }, self: "[Circular]" });
    expect(scrubSecrets(new Error("key sk-ant-abc"))).toEqual({
      name: "Error",
      message: "key sk-ant-[REDACTED]",
    });
  });
});
