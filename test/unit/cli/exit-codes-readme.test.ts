/**
 * src/cli/exit-codes.ts is the one place an exit code's meaning is written: the README's "Exit
 * codes" table must be exactly what `exitCodeTable()` makes (wherever the table moves among the
 * README and docs/, it is found by its header).
 */
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { EXIT, exitCodeTable } from "../../../src/cli/exit-codes.js";

const root = (path: string) => fileURLToPath(new URL(`../../../${path}`, import.meta.url));
const pages = ["README.md", ...readdirSync(root("docs")).map((name) => `docs/${name}`)].filter((p) =>
  p.endsWith(".md"),
);

/** Every table headed `| code | meaning |` in the README and docs/, each as its lines. */
function exitTables(): { page: string; lines: string[] }[] {
  const found: { page: string; lines: string[] }[] = [];
  for (const page of pages) {
    const lines = readFileSync(root(page), "utf8").split("\n");
    lines.forEach((line, index) => {
      if (line.trim() !== "| code | meaning |") return;
      const end = lines.findIndex((l, i) => i > index && !l.startsWith("|"));
      found.push({ page, lines: lines.slice(index, end === -1 ? undefined : end) });
    });
  }
  return found;
}

describe("the exit-code table", () => {
  it("is written once, in the README or docs/, and is what exit-codes.ts makes", () => {
    const tables = exitTables();
    expect(tables.map((t) => t.page)).toHaveLength(1);
    expect(tables[0]?.lines).toEqual(exitCodeTable());
  });

  it("lists every code but harness exec's own, by code", () => {
    const codes = exitCodeTable()
      .slice(2)
      .map((row) => Number(row.split("|")[1]));
    expect(codes).toEqual([
      EXIT.ok,
      EXIT.error,
      EXIT.usage,
      EXIT.limit,
      EXIT.modelStopped,
      EXIT.diverged,
      129,
      130,
      141,
      143,
    ]);
    expect(codes).not.toContain(EXIT.timedOut);
  });
});
