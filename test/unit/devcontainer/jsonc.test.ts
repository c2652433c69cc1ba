import { describe, expect, it } from "vitest";
import { JsoncError, parseJsonc } from "../../../src/devcontainer/jsonc.js";

describe("parseJsonc", () => {
  it("reads comments and trailing commas", () => {
    const text = `// a devcontainer
{
  /* the image */ "image": "x", // trailing
  "args": [1, 2,],
  "obj": { "a": "b", },
}`;
    expect(parseJsonc(text)).toEqual({ image: "x", args: [1, 2], obj: { a: "b" } });
  });

  it("leaves comment markers and commas inside strings alone", () => {
    expect(parseJsonc('{"a": "// not a comment", "b": "/* nor */", "c": ",}", "d": "q\\" // x"}')).toEqual({
      a: "// not a comment",
      b: "/* nor */",
      c: ",}",
      d: 'q" // x',
    });
  });

  it("skips a byte order mark", () => {
    expect(parseJsonc('\uFEFF{"a": 1}')).toEqual({ a: 1 });
  });

  it("refuses what is not JSON after comments and trailing commas", () => {
    expect(() => parseJsonc("{a: 1}")).toThrow(JsoncError);
    expect(() => parseJsonc("{'a': 1}")).toThrow(JsoncError);
    expect(() => parseJsonc('{"a": 1 /* open')).toThrow(/never closed/);
    expect(() => parseJsonc('{"a": "open}')).toThrow(/never closed/);
    expect(() => parseJsonc("[1,,]")).toThrow(JsoncError);
  });
});
