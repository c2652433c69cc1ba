import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { exitCodeForError } from "../../../src/cli/report-error.js";
import { parseTranscript, readTranscript, TranscriptError } from "../../../src/replay/read-transcript.js";
import { createTranscript } from "../../../src/transcript/transcript.js";
import { fixture } from "../../support/agent-fixture.js";
import { FakeSandbox } from "../../support/fake-sandbox.js";
import { answer, bash, response, toolCalls } from "../../support/scripted-model.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "harness-read-transcript-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const START = JSON.stringify({ type: "run_start", task: "Do it." });
const call = (id: string, command: string, name = "bash") =>
  JSON.stringify({ type: "tool_call", id, name, input: { command } });
const ran = (id: string, fields: Record<string, unknown> = {}) =>
  JSON.stringify({ type: "tool_result", id, stdout: "", stderr: "", exitCode: 0, ...fields });
const jsonl = (...lines: string[]) => `${lines.join("\n")}\n`;

/** The message of the error `text` is refused with. */
function refusal(text: string): string {
  try {
    parseTranscript(text);
  } catch (error) {
    expect(error).toBeInstanceOf(TranscriptError);
    return (error as Error).message;
  }
  throw new Error("the transcript was accepted");
}

describe("readTranscript", () => {
  it("reads back what `harness run` writes: ran, blocked and cut-off calls, with per-call timeouts", async () => {
    const path = join(dir, "run.jsonl");
    const sandbox = new FakeSandbox([
      { stdout: "hi\n", stderr: "warn\n", exitCode: 0 },
      { stdout: "", exitCode: undefined, timedOut: true },
    ]);
    const { run } = fixture(
      [
        toolCalls(bash("t1", "echo hi")),
        toolCalls(bash("t2", "sudo reboot")),
        toolCalls(bash("t3", "sleep 9", { timeout: 5 })),
        response([bash("t4", "ls -")], "max_tokens"),
        answer("Done."),
      ],
      { sandbox, events: createTranscript(path) },
    );
    await run("Say hi.");

    const transcript = await readTranscript(path);
    expect(transcript.task).toBe("Say hi.");
    expect(transcript.calls.map((c) => [c.n, c.id, c.kind, c.command])).toEqual([
      [1, "t1", "ran", "echo hi"],
      [2, "t2", "skipped", "sudo reboot"],
      [3, "t3", "ran", "sleep 9"],
      [4, "t4", "skipped", "ls -"],
    ]);
    const [first, blocked, timed, cut] = transcript.calls;
    expect(first).toMatchObject({
      recorded: { exitCode: 0, stdout: "hi\n", stderr: "warn\n", timedOut: false },
    });
    expect(blocked).toMatchObject({ reason: expect.stringMatching(/^not run in the recording: Blocked/) });
    expect(timed).toMatchObject({ input: { timeout: 5 }, recorded: { exitCode: null, timedOut: true } });
    expect(cut).toMatchObject({ reason: expect.stringMatching(/^not run in the recording: /) });
  });

  it("skips cancelled calls, calls with no result, and other tools, saying why", () => {
    const { calls } = parseTranscript(
      jsonl(
        START,
        call("a", "make", "python"),
        JSON.stringify({ type: "tool_result", id: "a", content: "Error: Tool 'python' not found" }),
        call("b", "sleep 100"),
        ran("b", { exitCode: null, canceled: true, stdout: "partial" }),
        call("c", "make test"),
      ),
    );
    expect(calls.map((c) => (c.kind === "skipped" ? c.reason : c.kind))).toEqual([
      "not a bash call (tool 'python')",
      "cancelled by the user in the recording",
      "no result was recorded (the recording ended here)",
    ]);
  });

  it("counts blank lines in line numbers and ignores record types it does not replay", () => {
    const text = jsonl(START, "", JSON.stringify({ type: "usage", total: {} }), call("a", "ls"), ran("a"));
    expect(parseTranscript(text).calls).toEqual([
      expect.objectContaining({ n: 1, id: "a", line: 4, kind: "ran" }),
    ]);
    expect(refusal(jsonl(START, "", "{oops"))).toMatch(/^line 3: not valid JSON/);
  });

  it("reads the recording's default command timeout from run_start, when it was written", () => {
    const withTimeout = JSON.stringify({ type: "run_start", task: "Do it.", commandTimeoutMs: 5000 });
    expect(parseTranscript(jsonl(withTimeout)).commandTimeoutMs).toBe(5000);
    expect(parseTranscript(jsonl(START)).commandTimeoutMs).toBeUndefined();
    const path = join(dir, "t.jsonl");
    const transcript = createTranscript(path, { runStart: { commandTimeoutMs: 7000 } });
    transcript.onRunStart({
      task: "t",
      system: "s",
      tools: ["bash"],
      limits: { maxTurns: 1, maxTokens: 10 },
    });
    return readTranscript(path).then((parsed) => expect(parsed.commandTimeoutMs).toBe(7000));
  });

  it("refuses malformed records with the line number", () => {
    expect(refusal(jsonl(START, "[1, 2]"))).toBe("line 2: a record must be a JSON object");
    expect(refusal(jsonl(START, '{"id": "x"}'))).toBe('line 2: a record needs a string "type"');
    expect(refusal(jsonl(call("a", "ls")))).toMatch(/^line 1: expected a run_start record first/);
    expect(refusal(jsonl(START, ran("nope")))).toBe("line 2: tool_result 'nope' has no tool_call before it");
    expect(refusal(jsonl(START, call("a", "ls"), ran("a", { exitCode: "0" })))).toBe(
      'line 3: "exitCode" must be an integer or null',
    );
    expect(refusal(jsonl(START, call("a", "ls"), ran("a", { stdout: 5 })))).toBe(
      'line 3: tool_result record needs a string "stdout"',
    );
    expect(refusal(jsonl(START, call("a", "ls"), ran("a", { timedOut: "no" })))).toBe(
      'line 3: "timedOut" must be true or false',
    );
    expect(refusal(jsonl(START, call("a", "ls"), call("a", "pwd")))).toBe(
      "line 3: tool_call id 'a' appears twice",
    );
    expect(refusal(JSON.stringify({ type: "tool_call", id: 1, name: "bash" }))).toMatch(/^line 1: /);
    expect(refusal("\n\n")).toBe("the file has no records");
  });

  it("names the file, and is a usage error (exit 2) when missing or malformed", async () => {
    const missing = join(dir, "missing.jsonl");
    await expect(readTranscript(missing)).rejects.toThrow(
      `cannot read transcript '${missing}': no such file`,
    );
    const bad = join(dir, "bad.jsonl");
    writeFileSync(bad, jsonl(START, "not json"));
    const error = await readTranscript(bad).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/^transcript '.*bad\.jsonl': line 2: not valid JSON/);
    expect(exitCodeForError(error)).toBe(2);
    await expect(readTranscript(dir)).rejects.toThrow(TranscriptError);
  });
});
