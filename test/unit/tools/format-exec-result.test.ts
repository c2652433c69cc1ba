import { describe, expect, it } from "vitest";
import { formatExecResult } from "../../../src/tools/format-exec-result.js";
import { makeExecResult } from "../../support/fake-sandbox.js";

describe("formatExecResult", () => {
  it("shows stdout and stderr apart, and the exit code", () => {
    const text = formatExecResult(makeExecResult({ stdout: "out\n", stderr: "warn\n", exitCode: 0 }));
    expect(text).toBe("<stdout>\nout\n</stdout>\n<stderr>\nwarn\n</stderr>\n<exit_code>0</exit_code>");
  });

  it("omits empty streams, and says so when there is no output at all", () => {
    expect(formatExecResult(makeExecResult({ stderr: "bad", exitCode: 2 }))).toBe(
      "<stderr>\nbad\n</stderr>\n<exit_code>2</exit_code>",
    );
    expect(formatExecResult(makeExecResult({}))).toBe("(no output)\n<exit_code>0</exit_code>");
  });

  it("says the command timed out and keeps the partial output", () => {
    const text = formatExecResult(
      makeExecResult({
        stdout: "started\n",
        exitCode: undefined,
        timedOut: true,
        shortMessage: "Command timed out after 5000 milliseconds",
      }),
    );
    expect(text).toContain("<stdout>\nstarted\n</stdout>");
    expect(text).toContain("<exit_code>none</exit_code>");
    expect(text).toContain("<note>Command timed out after 5000 milliseconds; it was killed.");
    expect(text).toContain("(partial)");
  });

  it("says the command was cancelled", () => {
    const text = formatExecResult(makeExecResult({ isCanceled: true, exitCode: undefined, stdout: "a" }));
    expect(text).toContain("cancelled by the user");
  });

  it("says a process was OOM-killed", () => {
    const text = formatExecResult(makeExecResult({ oomKilled: true, exitCode: 137 }));
    expect(text).toContain("<exit_code>137</exit_code>");
    expect(text).toContain("out-of-memory killer");
  });

  it("says how much output the sandbox cut, per stream", () => {
    const text = formatExecResult(
      makeExecResult({
        stdout: "head…tail",
        isTruncated: true,
        stdoutBytes: 5_000_000,
        stderr: "e",
        stderrBytes: 1,
      }),
    );
    expect(text).toContain("stdout was 5,000,000 bytes in total, 11 bytes kept");
    expect(text).not.toContain("stderr was");
  });

  it("passes the sandbox's notices on", () => {
    const text = formatExecResult(makeExecResult({ notices: ["the sandbox was restarted"] }));
    expect(text).toContain("<note>Sandbox notice: the sandbox was restarted</note>");
  });

  it("explains a command that never ran", () => {
    const text = formatExecResult(
      makeExecResult({ exitCode: undefined, failed: true, shortMessage: "The container stopped" }),
    );
    expect(text).toContain("did not run to completion: The container stopped");
  });

  it("caps what the model sees, keeping head and tail and the exit code", () => {
    const stdout = `FIRST${"o".repeat(50_000)}LAST`;
    const text = formatExecResult(makeExecResult({ stdout, stderr: "the error", exitCode: 1 }), {
      maxChars: 1000,
    });
    expect(text.length).toBeLessThan(1300);
    expect(text).toContain("FIRST");
    expect(text).toContain("LAST");
    expect(text).toContain("characters elided");
    expect(text).toContain("<stderr>\nthe error\n</stderr>");
    expect(text).toContain("<exit_code>1</exit_code>");
  });

  it("gives each stream a share when both are long", () => {
    const text = formatExecResult(makeExecResult({ stdout: "o".repeat(5000), stderr: "e".repeat(5000) }), {
      maxChars: 1000,
    });
    expect(text.match(/o/g)?.length).toBeGreaterThanOrEqual(500);
    expect(text.match(/e/g)?.length ?? 0).toBeGreaterThanOrEqual(500);
    expect(text.match(/characters elided/g)).toHaveLength(2);
  });
});
