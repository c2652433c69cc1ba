/** The text editor's commands on text, in the reference implementation's words. */
import { describe, expect, it } from "vitest";
import { CLIPPED_NOTE, insertLines, replaceText, viewText } from "../../../src/tools/editor/editor-text.js";
import { ToolError } from "../../../src/tools/tool.js";

const FILE = "one\ntwo\nthree\nfour\n";

describe("view", () => {
  it("numbers lines as cat -n does, and honours view_range (-1: to the end)", () => {
    expect(viewText("/w/f", FILE, undefined)).toBe(
      "Here's the result of running `cat -n` on /w/f:\n     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n     5\t\n",
    );
    expect(viewText("/w/f", FILE, [2, 3])).toBe(
      "Here's the result of running `cat -n` on /w/f:\n     2\ttwo\n     3\tthree\n",
    );
    expect(viewText("/w/f", FILE, [4, -1])).toBe(
      "Here's the result of running `cat -n` on /w/f:\n     4\tfour\n     5\t\n",
    );
  });

  it("refuses a bad view_range in the reference's words", () => {
    expect(() => viewText("/w/f", FILE, [1])).toThrow(
      "Invalid `view_range`. It should be a list of two integers.",
    );
    expect(() => viewText("/w/f", FILE, [0, 2])).toThrow(
      "Invalid `view_range`: [0, 2]. Its first element `0` should be within the range of lines of the file: [1, 5]",
    );
    expect(() => viewText("/w/f", FILE, [2, 9])).toThrow(
      "Invalid `view_range`: [2, 9]. Its second element `9` should be smaller than the number of lines in the file: `5`",
    );
    expect(() => viewText("/w/f", FILE, [3, 2])).toThrow(/should be larger or equal than its first `3`/);
  });

  it("cuts a view at max_characters with the reference's note", () => {
    const shown = viewText("/w/f", "x".repeat(100), undefined, 10);
    expect(shown).toBe(
      `Here's the result of running \`cat -n\` on /w/f:\n     1\txxxxxxxxxx${CLIPPED_NOTE}\n`,
    );
  });
});

describe("str_replace", () => {
  it("replaces the one occurrence, tabs and all, and shows a numbered snippet", () => {
    const edited = replaceText("/w/f", "a\n\tb = 1\nc\n", "\tb = 1", "\tb = 2");
    expect(edited.text).toBe("a\n\tb = 2\nc\n");
    expect(edited.message).toBe(
      "The file /w/f has been edited. Here's the result of running `cat -n` on a snippet of /w/f:\n     1\ta\n     2\t\tb = 2\n     3\tc\n     4\t\nReview the changes and make sure they are as expected. Edit the file again if necessary.",
    );
  });

  it("refuses zero or several matches with the API's wording", () => {
    expect(() => replaceText("/w/f", FILE, "five", "5")).toThrow(
      "No replacement was performed, old_str `five` did not appear verbatim in /w/f.",
    );
    expect(() => replaceText("/w/f", "x = 1\ny = 2\nx = 1\n", "x = 1", "x = 3")).toThrow(
      "No replacement was performed. Multiple occurrences of old_str `x = 1` in lines [1, 3]. Please ensure it is unique",
    );
    expect(() => replaceText("/w/f", FILE, "five", "5")).toThrow(ToolError);
  });
});

describe("insert", () => {
  it("inserts after a line (0: at the start) and refuses a line out of range", () => {
    expect(insertLines("/w/f", "a\nb", 0, "z").text).toBe("z\na\nb");
    const edited = insertLines("/w/f", "a\nb", 1, "x\ny");
    expect(edited.text).toBe("a\nx\ny\nb");
    expect(edited.message).toMatch(
      /^The file \/w\/f has been edited\. Here's the result of running `cat -n` on a snippet of the edited file:\n {5}1\ta\n {5}2\tx\n/,
    );
    expect(() => insertLines("/w/f", "a\nb", 3, "x")).toThrow(
      "Invalid `insert_line` parameter: 3. It should be within the range of lines of the file: [0, 2]",
    );
  });
});
