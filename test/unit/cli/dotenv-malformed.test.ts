import { parse } from "dotenv";
import { describe, expect, it } from "vitest";
import { malformedDotenvLines, malformedDotenvNotes } from "../../../src/cli/dotenv/dotenv-malformed.js";

const ENV = [
  "MODEL_ID=claude-x",
  "ANTHROPIC_API_KEY sk-ant-secret-value",
  "# a comment",
  'MULTI="first',
  'second"',
  "export FOO=bar",
  "  BAZ: qux",
  "junk line here",
  "",
  "SPACED = 30",
  "QUOTED='a' # note",
].join("\r\n");

describe("malformed .env lines", () => {
  it("are the lines dotenv's parser skips, and only those", () => {
    expect(Object.keys(parse(ENV))).toEqual(["MODEL_ID", "MULTI", "FOO", "BAZ", "SPACED", "QUOTED"]);
    expect(malformedDotenvLines(ENV)).toEqual([
      { line: 2, name: "ANTHROPIC_API_KEY" },
      { line: 8, name: undefined },
    ]);
    expect(malformedDotenvLines("A=1\n\n# x\nB='y'\n")).toEqual([]);
  });

  it("are said one line each, naming the line and the key but never the value", () => {
    const notes = malformedDotenvNotes("/p/.env", malformedDotenvLines(ENV));
    expect(notes).toEqual([
      "/p/.env line 2 is not KEY=value (it starts with ANTHROPIC_API_KEY), so dotenv skipped it: write it as ANTHROPIC_API_KEY=value, or start it with # to keep it as a comment",
      "/p/.env line 8 is not KEY=value, so dotenv skipped it: write it as KEY=value, or start it with # to keep it as a comment",
    ]);
    expect(notes.join("\n")).not.toContain("sk-ant");
    const many = malformedDotenvNotes("/p/.env", malformedDotenvLines("a\nb\nc\nd\ne\n"));
    expect(many).toHaveLength(4);
    expect(many[3]).toBe("/p/.env: 2 more lines skipped the same way");
  });
});
