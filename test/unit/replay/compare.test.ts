import { describe, expect, it } from "vitest";
import { compareOutputs, describeExit, firstDifference } from "../../../src/replay/compare.js";
import type { RecordedOutput } from "../../../src/replay/read-transcript.js";

const out = (fields: Partial<RecordedOutput> = {}): RecordedOutput => ({
  exitCode: 0,
  stdout: "",
  stderr: "",
  timedOut: false,
  ...fields,
});

describe("compareOutputs", () => {
  it("matches only when exit code, timeout, stdout and stderr are all equal", () => {
    expect(compareOutputs(out({ stdout: "a\n" }), out({ stdout: "a\n" }))).toEqual({
      matches: true,
      exitMatches: true,
    });
    expect(compareOutputs(out(), out({ exitCode: 1 }))).toMatchObject({ matches: false, exitMatches: false });
    expect(compareOutputs(out({ exitCode: null, timedOut: true }), out({ exitCode: null }))).toMatchObject({
      matches: false,
      exitMatches: false,
    });
    const stderr = compareOutputs(out({ stderr: "warn\n" }), out({ stderr: "warn \n" }));
    expect(stderr).toMatchObject({ matches: false, exitMatches: true });
    expect(stderr.stdoutDiff).toBeUndefined();
    expect(stderr.stderrDiff?.slice(0, 2)).toEqual(["--- recorded stderr", "+++ replayed stderr"]);
  });

  it("with ignoreOutput compares exit codes only", () => {
    expect(compareOutputs(out({ stdout: "a" }), out({ stdout: "b" }), { ignoreOutput: true })).toEqual({
      matches: true,
      exitMatches: true,
    });
    expect(compareOutputs(out(), out({ exitCode: 2, stdout: "x" }), { ignoreOutput: true })).toEqual({
      matches: false,
      exitMatches: false,
    });
  });
});

describe("firstDifference", () => {
  it("shows one line of context, then up to three lines of each side from the first difference", () => {
    const recorded = "one\ntwo\nthree\nfour\nfive\nsix\n";
    const replayed = "one\ntwo\nTHREE\n";
    expect(firstDifference(recorded, replayed, "stdout")).toEqual([
      "--- recorded stdout",
      "+++ replayed stdout",
      "@@ line 3 @@",
      " two",
      "-three",
      "-four",
      "-five",
      "-… 1 more line",
      "+THREE",
    ]);
  });

  it("says when only the final newline differs", () => {
    expect(firstDifference("a\nb\n", "a\nb", "stdout").slice(2)).toEqual([
      "@@ line 3 @@",
      " b",
      "\\ replayed output has no newline at the end",
    ]);
    expect(firstDifference("x", "x\n", "stderr").at(-1)).toBe("\\ recorded output has no newline at the end");
  });

  it("shows output that appeared or vanished, and cuts very long lines", () => {
    expect(firstDifference("", "boom\n", "stderr").slice(2)).toEqual(["@@ line 1 @@", "+boom"]);
    const long = "x".repeat(500);
    const [, , , removed] = firstDifference(long, "", "stdout");
    expect(removed).toBe(`-${"x".repeat(160)}…`);
  });
});

describe("describeExit", () => {
  it("names the outcome as a report shows it", () => {
    expect(describeExit(out({ exitCode: 3 }))).toBe("exit 3");
    expect(describeExit(out({ exitCode: 143, timedOut: true }))).toBe("timed out (exit 143)");
    expect(describeExit(out({ exitCode: null, timedOut: true }))).toBe("timed out (no exit code)");
    expect(describeExit(out({ exitCode: null }))).toBe("no exit code");
  });
});
