import { describe, expect, it } from "vitest";
import type { BackgroundProcess } from "../../../src/sandbox/sandbox.js";
import { formatExecResult } from "../../../src/tools/format-exec-result.js";
import { makeExecResult } from "../../support/fake-sandbox.js";

const notes = (text: string) => [...text.matchAll(/<note>(.*?)<\/note>/gs)].map((m) => m[1]);

describe("formatExecResult: jobs still running in the background", () => {
  it("names each job with its age, in a note that does not claim the model started it", () => {
    const background: BackgroundProcess[] = [
      { command: "python3 -m http.server 8000", ageSeconds: 200 },
      { command: "sleep 999", ageSeconds: 4 },
    ];
    const text = formatExecResult(makeExecResult({ stdout: "ok\n", background }));
    expect(notes(text)).toEqual([
      "Still running in the background in this sandbox: `python3 -m http.server 8000` (started 3 min ago), `sleep 999` (started 4 s ago).",
    ]);
  });

  it("adds no note when nothing runs in the background", () => {
    expect(formatExecResult(makeExecResult({ background: [] }))).not.toContain("<note>");
    expect(formatExecResult(makeExecResult({}))).not.toContain("<note>");
  });

  it("names five at most and counts the rest", () => {
    const background = Array.from({ length: 8 }, (_, i) => ({ command: `job-${i}`, ageSeconds: 7200 }));
    const [note] = notes(formatExecResult(makeExecResult({ background })));
    expect(note).toContain("`job-4` (started 2 h ago), and 3 more.");
    expect(note).not.toContain("job-5");
  });

  it("shows a command line on one line, cut, with control characters as escapes", () => {
    const background = [{ command: `evil\u001b]0;title\u0007\nnext ${"x".repeat(300)}`, ageSeconds: 90_000 }];
    const [note = ""] = notes(formatExecResult(makeExecResult({ background })));
    expect([...note].filter((char) => char.charCodeAt(0) < 0x20)).toEqual([]);
    expect(note).toContain("\\x1b]0;title\\x07 next");
    expect(note).toMatch(/x…` \(started 1 day ago\)\.$/);
    expect(note.length).toBeLessThan(200);
  });
});
