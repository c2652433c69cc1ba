import { describe, expect, it } from "vitest";
import { splitLines, unifiedDiff } from "../../../src/text/text-diff.js";

const names = { before: "a/f", after: "b/f" };

/** Applies a unified diff produced by unifiedDiff, checking every context and removed line. */
function applyDiff(before: string, diff: string): string {
  const source = splitLines(before);
  const out: string[] = [];
  let at = 0;
  const lines = diff.split("\n").slice(2);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const hunk = /^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@$/.exec(line);
    if (hunk) {
      const start = Number(hunk[1]) - (hunk[2] === "0" ? 0 : 1);
      while (at < start) out.push(source[at++] ?? "");
      continue;
    }
    if (line === "" || line.startsWith("\\")) continue;
    const noNewline = lines[i + 1]?.startsWith("\\ No newline") ?? false;
    const text = `${line.slice(1)}${noNewline ? "" : "\n"}`;
    if (line[0] === "+") out.push(text);
    else {
      expect(source[at]).toBe(text);
      at++;
      if (line[0] === " ") out.push(text);
    }
  }
  while (at < source.length) out.push(source[at++] ?? "");
  return out.join("");
}

describe("unifiedDiff", () => {
  it("is empty for equal texts", () => {
    expect(unifiedDiff("a\nb\n", "a\nb\n", names)).toBe("");
  });

  it("shows a change with three lines of context, as GNU diff -u does", () => {
    const before = "1\n2\n3\n4\n5\n6\n7\n8\n";
    const after = "1\n2\n3\n4\nfive\n6\n7\n8\n";
    expect(unifiedDiff(before, after, names)).toBe(
      "--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n",
    );
  });

  it("diffs a new file and a file emptied", () => {
    expect(unifiedDiff("", "x\ny\n", { before: "/dev/null", after: "b/f" })).toBe(
      "--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+x\n+y\n",
    );
    expect(unifiedDiff("x\n", "", names)).toBe("--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-x\n");
  });

  it("marks a missing newline at the end of a file", () => {
    expect(unifiedDiff("a\nb", "a\nb\n", names)).toBe(
      "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n",
    );
  });

  it("splits far-apart changes into hunks and merges near ones", () => {
    const lines = Array.from({ length: 30 }, (_, i) => `${i}\n`);
    const far = lines.map((l, i) => (i === 2 || i === 25 ? `x${l}` : l)).join("");
    expect(unifiedDiff(lines.join(""), far, names)?.match(/^@@/gm)).toHaveLength(2);
    const near = lines.map((l, i) => (i === 2 || i === 8 ? `x${l}` : l)).join("");
    expect(unifiedDiff(lines.join(""), near, names)?.match(/^@@/gm)).toHaveLength(1);
  });

  it("gives up past maxEdits instead of using unbounded memory", () => {
    const a = Array.from({ length: 100 }, (_, i) => `a${i}\n`).join("");
    const b = Array.from({ length: 100 }, (_, i) => `b${i}\n`).join("");
    expect(unifiedDiff(a, b, names, { maxEdits: 50 })).toBeUndefined();
    expect(unifiedDiff(a, b, names, { maxEdits: 200 })).toContain("-a0\n");
  });

  it("produces diffs that turn the old text into the new one (seeded random edits)", () => {
    let seed = 42;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let round = 0; round < 300; round++) {
      const base = Array.from({ length: random(30) }, () => `l${random(5)}\n`);
      const edited = [...base];
      for (let e = random(6); e > 0; e--) {
        const at = random(edited.length + 1);
        if (random(2) === 0) edited.splice(at, 0, `n${random(5)}\n`);
        else edited.splice(at, 1);
      }
      const before = random(5) === 0 ? base.join("").replace(/\n$/, "") : base.join("");
      const after = random(5) === 0 ? edited.join("").replace(/\n$/, "") : edited.join("");
      const diff = unifiedDiff(before, after, names) ?? "";
      expect(applyDiff(before, diff)).toBe(after);
    }
  });
});
