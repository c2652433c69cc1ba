import { describe, expect, it } from "vitest";
import { SandboxError } from "../../../src/errors.js";
import type { RanCall, RecordedOutput, SkippedCall } from "../../../src/replay/read-transcript.js";
import { type CallReplay, replayCalls } from "../../../src/replay/replay.js";
import { FakeSandbox, hang } from "../../support/fake-sandbox.js";

const output = (fields: Partial<RecordedOutput> = {}): RecordedOutput => ({
  exitCode: 0,
  stdout: "",
  stderr: "",
  timedOut: false,
  ...fields,
});

function ran(n: number, command: string, recorded: Partial<RecordedOutput> = {}, extra = {}): RanCall {
  return {
    n,
    id: `t${n}`,
    line: n,
    name: "bash",
    input: { command, ...extra },
    command,
    kind: "ran",
    recorded: output(recorded),
  };
}

function skipped(n: number, command: string, reason: string): SkippedCall {
  return { n, id: `t${n}`, line: n, name: "bash", input: { command }, command, kind: "skipped", reason };
}

describe("replayCalls", () => {
  it("runs the calls that ran, in order, with their own timeouts, and reports a reproduced run", async () => {
    const sandbox = new FakeSandbox([{ stdout: "hi\n" }, { stderr: "warn\n", exitCode: 3 }]);
    const seen: CallReplay[] = [];
    const report = await replayCalls(
      [
        ran(1, "echo hi", { stdout: "hi\n" }),
        skipped(2, "sudo reboot", "not run in the recording: Blocked"),
        ran(3, "make", { stderr: "warn\n", exitCode: 3 }, { timeout: 5 }),
      ],
      sandbox,
      { timeoutMs: 30_000, onCall: (call) => seen.push(call) },
    );
    expect(sandbox.commands).toEqual(["echo hi", "make"]);
    expect(sandbox.calls.map((c) => c.options.timeoutMs)).toEqual([30_000, 5_000]);
    expect(report).toMatchObject({
      reproduced: true,
      interrupted: false,
      summary: { total: 3, matched: 2, diverged: 0, skipped: 1 },
    });
    expect(seen.map((c) => [c.n, c.status])).toEqual([
      [1, "match"],
      [2, "skipped"],
      [3, "match"],
    ]);
    expect(seen[1]?.reason).toBe("not run in the recording: Blocked");
  });

  it("reports every diverging call and keeps going after the first", async () => {
    const sandbox = new FakeSandbox([{ exitCode: 1, stderr: "denied\n" }, { stdout: "Hello, World\n" }]);
    const report = await replayCalls(
      [ran(1, "printf x > f"), ran(2, "cat f", { stdout: "Hello, Agent Harness\n" })],
      sandbox,
      { timeoutMs: 1000 },
    );
    expect(report.reproduced).toBe(false);
    expect(report.summary).toEqual({ total: 2, matched: 0, diverged: 2, skipped: 0 });
    const [first, second] = report.calls;
    expect(first).toMatchObject({
      status: "mismatch",
      replayed: { exitCode: 1 },
      comparison: { exitMatches: false },
    });
    expect(second?.comparison?.stdoutDiff).toContain("-Hello, Agent Harness");
    expect(second?.comparison?.stdoutDiff).toContain("+Hello, World");
  });

  it("compares exit codes only with ignoreOutput", async () => {
    const sandbox = new FakeSandbox([{ stdout: "12:01\n" }, { exitCode: 2 }]);
    const calls = [ran(1, "date", { stdout: "11:59\n" }), ran(2, "false")];
    const report = await replayCalls(calls, sandbox, { timeoutMs: 1000, ignoreOutput: true });
    expect(report.calls.map((c) => c.status)).toEqual(["match", "mismatch"]);
  });

  it("scrubs key-like strings from replayed output, as the recording did", async () => {
    const sandbox = new FakeSandbox([{ stdout: "key sk-ant-abc123\n" }]);
    const report = await replayCalls([ran(1, "cat .env", { stdout: "key sk-ant-[REDACTED]\n" })], sandbox, {
      timeoutMs: 1000,
    });
    expect(report.calls[0]?.status).toBe("match");
  });

  it("caps a call's timeout the way the bash tool did when it was recorded", async () => {
    const sandbox = new FakeSandbox();
    await replayCalls([ran(1, "sleep 1", {}, { timeout: 99_999 })], sandbox, { timeoutMs: 1000 });
    expect(sandbox.calls[0]?.options.timeoutMs).toBe(600_000);
  });

  it("reports a recorded input the bash tool now refuses as a divergence", async () => {
    const sandbox = new FakeSandbox();
    const report = await replayCalls([ran(1, "ls", {}, { timeout: -1 })], sandbox, { timeoutMs: 1000 });
    expect(sandbox.commands).toEqual([]);
    expect(report.calls[0]).toMatchObject({ status: "mismatch", error: expect.stringMatching(/timeout/) });
  });

  it("stops when interrupted: the running command is cancelled and later calls are not run", async () => {
    const controller = new AbortController();
    const sandbox = new FakeSandbox([
      {},
      (command, options) => {
        controller.abort();
        return hang(command, options);
      },
    ]);
    const report = await replayCalls([ran(1, "true"), ran(2, "sleep 100"), ran(3, "true")], sandbox, {
      timeoutMs: 1000,
      signal: controller.signal,
    });
    expect(sandbox.commands).toEqual(["true", "sleep 100"]);
    expect(report).toMatchObject({ interrupted: true, reproduced: false });
    expect(report.calls.map((c) => c.n)).toEqual([1]);
  });

  it("lets an infrastructure failure through instead of calling it a divergence", async () => {
    const sandbox = new FakeSandbox([new SandboxError("the container is gone")]);
    await expect(replayCalls([ran(1, "ls")], sandbox, { timeoutMs: 1000 })).rejects.toThrow(SandboxError);
  });
});
