import { describe, expect, it } from "vitest";
import { visibleControls } from "../../../src/text/visible-controls.js";

describe("visibleControls", () => {
  it("shows escape sequences, other controls and bidi overrides as escapes", () => {
    const raw = "a\u001b]52;c;Y3VybA==\u0007b\u001b[2Jc\u0000d\u009be\u202ef\u2066g";
    expect(visibleControls(raw)).toBe("a\\x1b]52;c;Y3VybA==\\x07b\\x1b[2Jc\\x00d\\x9be\\u202ef\\u2066g");
  });

  it("keeps tabs, newlines, carriage returns and ordinary text, accents and emoji included", () => {
    const text = "col1\tcol2\r\nnaïve — 日本語 🙂\n";
    expect(visibleControls(text)).toBe(text);
  });
});
