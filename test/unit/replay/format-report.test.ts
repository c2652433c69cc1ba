import { describe, expect, it } from "vitest";
import { compareOutputs } from "../../../src/replay/compare.js";
import { formatCall, formatSummary, reportToJson } from "../../../src/replay/format-report.js";
import type { CallReplay, ReplayReport } from "../../../src/replay/replay.js";

const exit0 = { exitCode: 0, stdout: "", stderr: "", timedOut: false };

function mismatch(
  n: number,
  command: string,
  recordedOut: string,
  replayedOut: string,
  exitCode = 0,
): CallReplay {
  const recorded = { ...exit0, stdout: recordedOut };
  const replayed = { ...exit0, stdout: replayedOut, exitCode };
  return {
    n,
    id: `t${n}`,
    command,
    status: "mismatch",
    recorded,
    replayed,
    comparison: compareOutputs(recorded, replayed),
  };
}

function report(calls: CallReplay[], fields: Partial<ReplayReport> = {}): ReplayReport {
  const count = (s: string) => calls.filter((c) => c.status === s).length;
  const summary = {
    total: calls.length,
    matched: count("match"),
    diverged: count("mismatch"),
    skipped: count("skipped"),
  };
  return { calls, summary, reproduced: summary.diverged === 0, interrupted: false, ...fields };
}

describe("formatCall", () => {
  it("shows one line per matching call: number, mark, first line of the command", () => {
    const call: CallReplay = { n: 1, id: "t1", command: "cat <<EOF > a\nx\nEOF", status: "match" };
    expect(formatCall(call)).toEqual(["  1 ✓ cat <<EOF > a …"]);
  });

  it("explains a skipped call and shows a short diff under a mismatch", () => {
    expect(formatCall({ n: 2, id: "t2", command: "sudo x", status: "skipped", reason: "blocked" })).toEqual([
      "  2 - sudo x",
      "      skipped: blocked",
    ]);
    expect(formatCall(mismatch(3, "python3 hello.py", "Hello\n", "Bye\n", 1))).toEqual([
      "  3 ✗ python3 hello.py",
      "      recorded exit 0, replayed exit 1",
      "      --- recorded stdout",
      "      +++ replayed stdout",
      "      @@ line 1 @@",
      "      -Hello",
      "      +Bye",
    ]);
  });

  it("shows control characters in commands and output as escapes", () => {
    const lines = formatCall(
      mismatch(4, "echo \u001b]0;pwned\u0007hi", "ok\n", "\u001b[2J\u001b[31mred\r\n"),
    );
    const shown = lines.join("\n");
    for (const control of ["\u001b", "\u0007", "\r"]) expect(shown).not.toContain(control);
    expect(lines[0]).toBe("  4 ✗ echo \\x1b]0;pwned\\x07hi");
    expect(lines).toContain("      +\\x1b[2J\\x1b[31mred\\r");
  });
});

describe("formatSummary", () => {
  it("says whether the run reproduced, which calls diverged, and how many were skipped", () => {
    const ok: CallReplay = { n: 1, id: "t1", command: "true", status: "match" };
    const skip: CallReplay = { n: 2, id: "t2", command: "x", status: "skipped", reason: "cut off" };
    expect(formatSummary(report([ok, skip]))).toBe("reproduced: 1 of 1 replayed calls matched, 1 skipped");
    const bad = mismatch(3, "cat f", "a", "b");
    expect(formatSummary(report([ok, bad]))).toBe("diverged: 1 of 2 replayed calls differed (call 3)");
    expect(
      formatSummary(
        report([ok], {
          reproduced: false,
          interrupted: true,
          summary: { total: 3, matched: 1, diverged: 0, skipped: 0 },
        }),
      ),
    ).toBe("interrupted: 1 of 3 calls replayed (0 diverged)");
  });
});

describe("reportToJson", () => {
  it("gives every call's status, exit codes and diff, plus the summary and where it ran", () => {
    const json = reportToJson(report([mismatch(1, "cat f", "a\n", "b\n")]), {
      transcript: "t.jsonl",
      workspace: "/tmp/ws",
      workspaceKept: false,
      ignoreOutput: false,
    });
    expect(JSON.parse(JSON.stringify(json))).toEqual({
      transcript: "t.jsonl",
      workspace: "/tmp/ws",
      workspaceKept: false,
      ignoreOutput: false,
      reproduced: false,
      interrupted: false,
      summary: { total: 1, matched: 0, diverged: 1, skipped: 0 },
      calls: [
        {
          n: 1,
          id: "t1",
          command: "cat f",
          status: "mismatch",
          recorded: { exitCode: 0, timedOut: false },
          replayed: { exitCode: 0, timedOut: false },
          diff: { stdout: ["--- recorded stdout", "+++ replayed stdout", "@@ line 1 @@", "-a", "+b"] },
        },
      ],
    });
  });
});
