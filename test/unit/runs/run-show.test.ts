import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { formatRun } from "../../../src/runs/run-show.js";
import type { TranscriptRecord } from "../../../src/transcript/transcript-records.js";
import { fakeRecords, makeStateHome, toJsonl, usageOf } from "../../support/run-fixtures.js";

const START = Date.parse("2026-11-30T09:00:00.000Z");

async function shown(text: string): Promise<string> {
  using state = makeStateHome();
  const path = join(state.runs, "run.jsonl");
  writeFileSync(path, text);
  const lines: string[] = [];
  for await (const line of formatRun(path, { env: {} })) lines.push(line);
  return lines.join("\n");
}

describe("formatRun", () => {
  it("shows the task, each command with its exit code and notes, the model's text, the ending and final text", async () => {
    const records = fakeRecords(
      {
        task: "make the tests pass",
        workspace: "/home/u/app",
        commands: [
          { command: "npm test", exitCode: 1, stderr: "Error: x\n1 failing\n" },
          {
            command: "cd src && sed -i s/a/b/ x.js",
            exitCode: 0,
            notices: ["working directory is now /workspace/src"],
          },
        ],
        end: { status: "submitted", turns: 3, usage: usageOf(1_000_000, 0), finalText: "Fixed x.js." },
      },
      START,
    );
    const text = await shown(toJsonl(records));
    expect(text).toContain(
      "started    2026-11-30 09:00:00 UTC\nworkspace  /home/u/app\ntask\n    make the tests pass",
    );
    expect(text).toContain("[1] $ npm test\n    exit 1 · 42 ms\n    stderr: 1 failing");
    expect(text).toContain(
      "[2] $ cd src && sed -i s/a/b/ x.js\n    exit 0 · 42 ms · notes: working directory is now /workspace/src",
    );
    expect(text).toContain("model:\n    Running step 1.");
    expect(text).toContain("ended: submitted after 3 turns · 1,000,000 tokens · about $3");
    expect(text).toMatch(/final text\n {4}Fixed x\.js\.$/);
  });

  it("shows calls that did not run, other tools, timeouts and cut output", async () => {
    const t = "2026-11-30T09:00:00.000Z";
    const records: TranscriptRecord[] = [
      {
        type: "run_start",
        time: t,
        task: "t",
        system: "s",
        tools: ["bash"],
        limits: { maxTurns: 5, maxTokens: 10 },
      },
      { type: "tool_call", time: t, id: "a", name: "bash", input: { command: "rm -rf /" } },
      {
        type: "tool_result",
        time: t,
        id: "a",
        name: "bash",
        isError: true,
        content: "Blocked: rm -rf /\nmore",
        command: "rm -rf /",
      },
      { type: "tool_call", time: t, id: "b", name: "read_output", input: { id: "out-1" } },
      { type: "tool_result", time: t, id: "b", name: "read_output", isError: false, content: "12345" },
      { type: "tool_call", time: t, id: "c", name: "bash", input: { command: "sleep 999" } },
      {
        type: "tool_result",
        time: t,
        id: "c",
        name: "bash",
        isError: true,
        content: "timed out",
        command: "sleep 999",
        stdout: "",
        stderr: "",
        exitCode: null,
        durationMs: 120_000,
        timedOut: true,
        canceled: false,
        oomKilled: false,
        truncated: true,
        stdoutBytes: 9,
        stderrBytes: 0,
        notices: [],
      },
      { type: "notice", time: t, text: "turn limit reached" },
      { type: "tool_call", time: t, id: "d", name: "bash", input: { command: "make" } },
    ];
    const text = await shown(toJsonl(records));
    expect(text).toContain("[1] $ rm -rf /\n    not run: Blocked: rm -rf /");
    expect(text).toContain('[2] read_output {"id":"out-1"}\n    ok (5 characters)');
    expect(text).toContain(
      "[3] $ sleep 999\n    no exit code · 120.0 s · timed out · output cut (stdout 9 bytes, stderr 0 bytes)",
    );
    expect(text).toContain("note: turn limit reached");
    expect(text).toContain("[4] $ make\n    no result recorded (the run stopped here)");
    expect(text).toContain("not ended: no run_end record");
  });

  it("shows control characters as escapes in everything it shows", async () => {
    const records = fakeRecords(
      {
        task: "title \u001b]0;pwned\u0007 here",
        commands: [
          { command: "echo \u001b[2Jhi", exitCode: 3, stderr: "\u001b]52;c;ZXZpbA==\u0007bad\u202e" },
        ],
        end: { status: "error", turns: 1, usage: usageOf(0, 0), finalText: "\u001b[31mred\u001b[0m" },
      },
      START,
    );
    const text = await shown(toJsonl(records));
    for (const control of ["\u001b", "\u0007", "\u202e"]) expect(text).not.toContain(control);
    expect(text).toContain("title \\x1b]0;pwned\\x07 here");
    expect(text).toContain("[1] $ echo \\x1b[2Jhi");
    expect(text).toContain("stderr: \\x1b]52;c;ZXZpbA==\\x07bad\\u202e");
    expect(text).toContain("    \\x1b[31mred\\x1b[0m");
  });

  it("names damaged lines, skips them, and says when the file ends mid-record", async () => {
    const records = fakeRecords({ task: "t", commands: [{ command: "ls", exitCode: 0 }] }, START);
    const text = await shown(
      `${toJsonl(records.slice(0, 2))}{oops\n${toJsonl(records.slice(2))}{"type":"assi`,
    );
    expect(text).toContain("line 3: not a transcript record (skipped)");
    expect(text).toContain("[1] $ ls\n    exit 0");
    expect(text).toContain("(the transcript ends mid-record: its writer was stopped)");
  });

  it("shows each prompt of an interactive session", async () => {
    const one = fakeRecords(
      { task: "first", end: { status: "submitted", turns: 1, usage: usageOf(0, 0) } },
      START,
    );
    const two = fakeRecords(
      { task: "second", end: { status: "submitted", turns: 1, usage: usageOf(0, 0) } },
      START + 60_000,
    );
    const text = await shown(toJsonl([...one, ...two]));
    expect(text).toContain("prompt 2, 2026-11-30 09:01:00 UTC\ntask\n    second");
    expect(text.match(/ended: submitted/g)).toHaveLength(2);
  });

  it("shows editor calls like bash calls (command, path, the edit) and each context edit as one line", async () => {
    const t = "2026-11-30T09:00:00.000Z";
    const usage = usageOf(0, 0);
    const path = "/workspace/notes.txt";
    const editor = "str_replace_based_edit_tool";
    const call = (id: string, input: Record<string, unknown>): TranscriptRecord[] => [
      { type: "tool_call", time: t, id, name: editor, input },
    ];
    const answer = (id: string, content: string, isError = false): TranscriptRecord => ({
      type: "tool_result",
      time: t,
      id,
      name: editor,
      isError,
      content,
    });
    const records: TranscriptRecord[] = [
      {
        type: "run_start",
        time: t,
        task: "t",
        system: "s",
        tools: [editor],
        limits: { maxTurns: 9, maxTokens: 10 },
      },
      ...call("e1", { command: "create", path, file_text: "a\nb\n" }),
      answer("e1", `File created successfully at: ${path}`),
      ...call("e2", { command: "str_replace", path, old_str: "steps done: 3", new_str: "steps done: 10" }),
      answer("e2", `The file ${path} has been edited. …`),
      {
        type: "context",
        time: t,
        kind: "compaction",
        by: "server",
        droppedMessages: 12,
        contextTokens: 3456,
        usage,
      },
      ...call("e3", { command: "view", path, view_range: [1, -1] }),
      answer("e3", `Here's the result of running \`cat -n\` on ${path}:\n     1\ta\n`),
      {
        type: "context",
        time: t,
        kind: "clear_tool_results",
        cleared: [
          { toolUseId: "e1", placeholder: "[harness cleared this tool result]" },
          { toolUseId: "e2", placeholder: "[harness cleared this tool result]" },
        ],
        tokensBefore: 150_210,
        tokensAfter: 93_004,
      },
      ...call("e4", { command: "insert", path, insert_line: 9, insert_text: "c\nd\n" }),
      answer(
        "e4",
        "Invalid `insert_line` parameter: 9. It should be within the range of lines of the file: [0, 2]",
        true,
      ),
      {
        type: "context",
        time: t,
        kind: "summary",
        summary: "Ran the steps.",
        keptMessages: 2,
        tokensBefore: 20_000,
        tokensAfter: 3_000,
        usage,
      },
      {
        type: "assistant",
        time: t,
        id: "m1",
        model: "claude-x",
        stopReason: "end_turn",
        usage,
        content: [
          { type: "withheld", block: "thinking", reason: "it held an Anthropic API key" },
          { type: "text", text: "Done.", citations: null },
        ],
      },
    ];
    const text = await shown(toJsonl(records));
    expect(text).not.toContain('{"command"');
    expect(text).toContain(`[1] ✎ create ${path} (2 lines)\n    ok`);
    expect(text).toContain(`[2] ✎ str_replace ${path}: "steps done: 3" → "steps done: 10"\n    ok`);
    expect(text).toContain(
      "context: the API compacted the conversation (12 earlier messages now stand as its summary; the context is 3,456 tokens)",
    );
    expect(text).toMatch(/\[3\] ✎ view \/workspace\/notes\.txt lines 1-end\n {4}ok \(\d+ characters\)/);
    expect(text).toContain(
      "context: cleared 2 old tool result(s), about 150,210 → 93,004 tokens (their text stays readable with read_output)",
    );
    expect(text).toContain(
      `[4] ✎ insert ${path} after line 9 (+2 lines)\n    error: Invalid \`insert_line\` parameter: 9.`,
    );
    expect(text).toContain(
      "context: summarized the conversation before the last turn, about 20,000 → 3,000 tokens",
    );
    expect(text).toContain(
      "note: a thinking block was not recorded: it held an Anthropic API key\nmodel:\n    Done.",
    );
  });

  it("rejects when the file cannot be opened", async () => {
    const lines = formatRun("/nonexistent/run.jsonl");
    await expect(lines.next()).rejects.toThrow(/ENOENT/);
  });
});
