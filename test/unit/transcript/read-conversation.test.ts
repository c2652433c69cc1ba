import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkRebuiltConversation } from "../../../src/cli/runs/rebuilt-conversation.js";
import { ConfigError } from "../../../src/errors.js";
import type { MessageParam } from "../../../src/model/model-client.js";
import {
  INCOMPLETE_CALL_TEXT,
  parseConversation,
  readConversation,
} from "../../../src/transcript/read-conversation.js";
import { createTranscript } from "../../../src/transcript/transcript.js";
import type { TranscriptRecord } from "../../../src/transcript/transcript-records.js";
import { fixture } from "../../support/agent-fixture.js";
import { FakeSandbox } from "../../support/fake-sandbox.js";
import { answer, bash, text, toolCalls, usage } from "../../support/scripted-model.js";
import { validateConversation } from "../../support/validate-conversation.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "harness-conversation-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** What the loop's messages look like after a trip through JSON (the transcript's own encoding). */
const asJson = (messages: readonly MessageParam[]): MessageParam[] => JSON.parse(JSON.stringify(messages));

const START: TranscriptRecord = {
  type: "run_start",
  time: "2026-01-01T00:00:00.000Z",
  task: "fix it",
  system: "You are a coding agent.",
  tools: ["bash"],
  limits: { maxTurns: 50, maxTokens: 8000 },
  workspace: "/srv/project",
  pid: 4242,
};

const jsonl = (records: readonly object[]): string =>
  records.map((record) => `${JSON.stringify(record)}\n`).join("");

describe("readConversation", () => {
  it("rebuilds a run's conversation exactly as the loop kept it", async () => {
    const path = join(dir, "run.jsonl");
    const sandbox = new FakeSandbox([
      { stdout: "a.txt\n", exitCode: 0 },
      { stderr: "no\n", exitCode: 2 },
    ]);
    const { run } = fixture(
      [toolCalls(text("Looking."), bash("t1", "ls")), toolCalls(bash("t2", "make")), answer("Done.")],
      { sandbox, events: createTranscript(path, { runStart: { workspace: "/srv/project", pid: 77 } }) },
    );
    const result = await run("List files.");

    const conversation = await readConversation(path);
    expect(conversation.messages).toEqual(asJson(result.messages));
    expect(conversation).toMatchObject({
      runs: 1,
      ended: true,
      workspace: "/srv/project",
      pid: 77,
      incompleteCalls: [],
    });
    expect(validateConversation(conversation.messages)).toEqual([]);
  });

  it("rebuilds an interactive session of two prompts as one conversation", async () => {
    const path = join(dir, "session.jsonl");
    const sandbox = new FakeSandbox([
      { stdout: "1\n", exitCode: 0 },
      { stdout: "2\n", exitCode: 0 },
    ]);
    const { run } = fixture(
      [toolCalls(bash("a1", "echo 1")), answer("One."), toolCalls(bash("b1", "echo 2")), answer("Two.")],
      { sandbox, events: createTranscript(path) },
    );
    const first = await run("first prompt");
    const second = await run("second prompt", first.messages);

    const conversation = await readConversation(path);
    expect(conversation.messages).toEqual(asJson(second.messages));
    expect(conversation.runs).toBe(2);
    expect(conversation.messages.map((m) => m.role)).toEqual([
      "user",
      "assistant",
      "user",
      "assistant",
      "user",
      "assistant",
      "user",
      "assistant",
    ]);
  });

  it("answers tool calls cut off mid-turn as not completed, before the next prompt's text", () => {
    const records = [
      START,
      { type: "user", time: START.time, text: "fix it" },
      {
        type: "assistant",
        time: START.time,
        id: "msg_1",
        model: "claude-test",
        stopReason: "tool_use",
        content: [bash("t1", "make"), bash("t2", "make test")],
        usage: usage(),
      },
      { type: "tool_call", time: START.time, id: "t1", name: "bash", input: { command: "make" } },
      { type: "tool_result", time: START.time, id: "t1", name: "bash", isError: false, content: "built" },
      { type: "tool_call", time: START.time, id: "t2", name: "bash", input: { command: "make test" } },
    ];
    const cut = parseConversation(jsonl(records));
    expect(cut.ended).toBe(false);
    expect(cut.incompleteCalls).toEqual(["t2"]);
    expect(cut.messages.at(-1)).toEqual({
      role: "user",
      content: [
        { type: "tool_result", tool_use_id: "t1", content: "built" },
        { type: "tool_result", tool_use_id: "t2", content: INCOMPLETE_CALL_TEXT, is_error: true },
      ],
    });
    expect(validateConversation(cut.messages)).toEqual([]);

    // Continued once already: the same answer sits before the continuation's task, in the same message.
    const continued = parseConversation(
      jsonl([...records, { ...START, pid: 4343 }, { type: "user", time: START.time, text: "go on" }]),
    );
    expect(continued).toMatchObject({ runs: 2, pid: 4343, incompleteCalls: ["t2"] });
    expect(continued.messages.at(-1)?.content).toEqual([
      { type: "tool_result", tool_use_id: "t1", content: "built" },
      { type: "tool_result", tool_use_id: "t2", content: INCOMPLETE_CALL_TEXT, is_error: true },
      { type: "text", text: "go on" },
    ]);
    expect(validateConversation(continued.messages)).toEqual([]);
  });

  it("gives a conversation the loop can go on with, cut off or not", async () => {
    const path = join(dir, "cut.jsonl");
    writeFileSync(
      path,
      jsonl([
        START,
        { type: "user", time: START.time, text: "fix it" },
        {
          type: "assistant",
          time: START.time,
          id: "msg_1",
          model: "claude-test",
          stopReason: "tool_use",
          content: [bash("t1", "make")],
          usage: usage(),
        },
      ]),
    );
    const { messages } = await readConversation(path);
    const { run, model } = fixture([answer("It was cut; retrying later.")], {
      events: createTranscript(path),
    });
    const result = await run("go on", messages);
    expect(result.status).toBe("submitted");
    // The scripted model rejects what the API would reject; this request passed.
    expect(JSON.stringify(model.requests[0]?.messages)).toContain('"tool_use_id":"t1"');
    expect((await readConversation(path)).messages).toEqual(asJson(result.messages));
  });

  it("refuses a corrupt line with its number and the file's name", async () => {
    const path = join(dir, "bad.jsonl");
    writeFileSync(
      path,
      `${jsonl([START, { type: "user", time: START.time, text: "hi" }])}{"type": "assist\n`,
    );
    const error = await readConversation(path).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/^transcript '.*bad\.jsonl': line 3: not valid JSON/);
  });

  it("says when the last line was cut while it was written", () => {
    expect(() => parseConversation(`${jsonl([START])}{"type":"user","te`)).toThrow(
      /line 2: not valid JSON .*ends mid-record/,
    );
  });

  it("refuses records that would make an invalid conversation", () => {
    const user = { type: "user", time: START.time, text: "hi" };
    expect(() => parseConversation(jsonl([user]))).toThrow(/line 1: expected a run_start record first/);
    expect(() =>
      parseConversation(
        jsonl([START, user, { type: "tool_result", time: START.time, id: "x", name: "bash", content: "" }]),
      ),
    ).toThrow(/line 3: tool_result 'x' answers no tool_use/);
    expect(() => parseConversation(jsonl([START, { type: "user", time: START.time }]))).toThrow(
      /line 2: user record needs a string "text"/,
    );
    expect(() => parseConversation("\n")).toThrow(ConfigError);
  });

  it("says when the file cannot be read", async () => {
    await expect(readConversation(join(dir, "missing.jsonl"))).rejects.toThrow(
      /cannot read transcript '.*missing\.jsonl': no such file/,
    );
  });

  it("leaves the file as it was", async () => {
    const path = join(dir, "kept.jsonl");
    const body = jsonl([START, { type: "user", time: START.time, text: "hi" }]);
    writeFileSync(path, body);
    await readConversation(path);
    expect(readFileSync(path, "utf8")).toBe(body);
  });
});

describe("parseConversation: what the transcript could not keep of what the model was sent", () => {
  const assistant = (line: object[], extra: object = {}) => ({
    type: "assistant",
    time: "t",
    id: "m",
    model: "claude-x",
    stopReason: "tool_use",
    usage: { inputTokens: 1, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
    content: line,
    ...extra,
  });
  const thought = (text: string) => ({ type: "thinking", thinking: text, signature: `sig_${text}` });
  const call = (id: string) => ({ type: "tool_use", id, name: "bash", input: { command: "ls" } });
  const result = (id: string, extra: object = {}) => ({
    type: "tool_result",
    time: "t",
    id,
    name: "bash",
    isError: false,
    content: "ok",
    ...extra,
  });
  const thinkingOf = (messages: MessageParam[]) =>
    messages.flatMap((m) =>
      typeof m.content === "string"
        ? []
        : m.content.flatMap((b) => (b.type === "thinking" ? [b.thinking] : [])),
    );

  it("starts afresh at a compaction block: a change before it leaves no thinking out", () => {
    const compaction = { type: "compaction", content: "Summary.", encrypted_content: "e", signature: "c" };
    const text = jsonl([
      START,
      { type: "user", time: "t", text: "go [REDACTED]", masked: true },
      assistant([thought("one"), call("t1")]),
      result("t1"),
      assistant([compaction, thought("two"), call("t2")]),
      result("t2"),
    ]);
    const conversation = parseConversation(text);
    expect(thinkingOf(conversation.messages)).toEqual(["two"]);
    expect(conversation.thinking).toEqual({ leftOut: 0, openTurn: false });
  });

  it("leaves out the thinking after a masked block of a turn, not before it", () => {
    const text = jsonl([
      START,
      { type: "user", time: "t", text: "go" },
      assistant(
        [thought("one"), { type: "text", text: "x-api-key: [REDACTED]" }, thought("two"), call("t1")],
        {
          maskedBlocks: [1],
        },
      ),
      result("t1"),
    ]);
    const conversation = parseConversation(text);
    expect(thinkingOf(conversation.messages)).toEqual(["one"]);
    expect(conversation.thinking).toEqual({
      leftOut: 1,
      because: { line: 3, why: "masked" },
      openTurn: true,
    });
    expect(parseConversation(text, undefined, { dropThinking: true }).thinking).toEqual({
      leftOut: 0,
      openTurn: false,
    });
    // A fork from that step ends in that turn: refused in the fork's words, unless thinking is off.
    const fork = parseConversation(text, { steps: 1, notRunText: "n" });
    expect(() => checkRebuiltConversation(fork, "--fork", "run-1", false)).toThrow(
      /^--fork: the fork of run run-1 ends in the middle of a turn whose thinking cannot be sent back \(a secret was masked at transcript line 3\), .*: give --thinking off$/,
    );
    expect(checkRebuiltConversation(fork, "--fork", "run-1", true)).toHaveLength(1);
  });

  it("leaves out the kept turn's thinking after a masked summary", () => {
    const text = jsonl([
      START,
      { type: "user", time: "t", text: "go" },
      assistant([thought("one"), call("t1")]),
      result("t1"),
      {
        type: "context",
        time: "t",
        kind: "summary",
        summary: "Ran ls with x-api-key: [REDACTED].",
        keptMessages: 2,
        tokensBefore: 10,
        tokensAfter: 5,
        usage: { inputTokens: 1, outputTokens: 1, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
        masked: true,
      },
    ]);
    const conversation = parseConversation(text);
    expect(thinkingOf(conversation.messages)).toEqual([]);
    expect(conversation.thinking).toMatchObject({ leftOut: 1, because: { line: 5, why: "masked" } });
  });

  it("names a withheld compaction block: the conversation before it cannot be stood in for", () => {
    const text = jsonl([
      START,
      { type: "user", time: "t", text: "go" },
      assistant([call("t1")]),
      result("t1"),
      assistant([
        { type: "withheld", block: "compaction", reason: "it held an Anthropic API key" },
        call("t2"),
      ]),
      result("t2"),
    ]);
    const conversation = parseConversation(text);
    expect(conversation.withheldCompaction).toEqual({ line: 5, steps: 1 });
    expect(() => checkRebuiltConversation(conversation, "--resume", "run-1", false)).toThrow(
      new ConfigError(
        "--resume: the API's compaction block of run run-1 (transcript line 5) was not recorded, because it held an Anthropic API key, and the conversation before it cannot be sent in its place: start a new run, or fork from before it (--fork run-1@1)",
      ),
    );
    // A fork from before it never reads it.
    expect(parseConversation(text, { steps: 1, notRunText: "n" }).withheldCompaction).toBeUndefined();
  });
});
