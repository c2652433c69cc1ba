import { describe, expect, it } from "vitest";
import { outputText } from "../../../../src/sandbox/exec/output-text.js";

const bytes = (...b: number[]) => Buffer.from(b);

describe("outputText (issue 35: no byte silently changed)", () => {
  it("escapes a NUL and a byte that is not UTF-8 with their values, and counts them", () => {
    // `printf 'a\0b\377c'`: reached the model as "a\\0b\uFFFDc", the byte's value lost, nothing said.
    expect(outputText(bytes(0x61, 0x00, 0x62, 0xff, 0x63))).toEqual({
      text: "a\\x00b\\xffc",
      notTextBytes: 2,
    });
  });

  it("passes valid UTF-8 as is, controls included (the tools layer shows those)", () => {
    const text = "plain é € 😀 \t\r\n \u001b[31m \u007f \u0085";
    expect(outputText(Buffer.from(text))).toEqual({ text, notTextBytes: 0 });
  });

  it("escapes every byte of an invalid sequence, not one replacement for the lot", () => {
    const cases: Array<[number[], string]> = [
      [[0xc0, 0x80], "\\xc0\\x80"], // overlong NUL
      [[0xe0, 0x80, 0xaf], "\\xe0\\x80\\xaf"], // overlong
      [[0xed, 0xa0, 0x80], "\\xed\\xa0\\x80"], // a UTF-16 surrogate
      [[0xf4, 0x90, 0x80, 0x80], "\\xf4\\x90\\x80\\x80"], // above U+10FFFF
      [[0xe2, 0x82], "\\xe2\\x82"], // cut short at the end
      [[0x80], "\\x80"], // a lone continuation byte
    ];
    for (const [input, shown] of cases)
      expect(outputText(bytes(0x3c, ...input, 0x3e))).toEqual({
        text: `<${shown}>`,
        notTextBytes: input.length,
      });
  });

  it("keeps the valid characters around an invalid byte", () => {
    const input = Buffer.concat([Buffer.from("é"), bytes(0xe2, 0x82), Buffer.from("€"), bytes(0xff)]);
    expect(outputText(input)).toEqual({ text: "é\\xe2\\x82€\\xff", notTextBytes: 3 });
  });
});
