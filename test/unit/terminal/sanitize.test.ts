import { describe, expect, it } from "vitest";
import { sanitizeForTerminal } from "../../../src/terminal/sanitize.js";

const ESC = "\u001b";
const BEL = "\u0007";

describe("sanitizeForTerminal", () => {
  it("keeps plain text, newlines, tabs and non-ASCII text", () => {
    expect(sanitizeForTerminal("a\tb\nc — ünïcødé 中文 😀")).toBe("a\tb\nc — ünïcødé 中文 😀");
  });

  it.each([
    ["SGR colour", `${ESC}[31mred${ESC}[0m`, "red"],
    ["clear screen and home", `${ESC}[2J${ESC}[Hafter`, "after"],
    ["cursor up and erase line (overwrite what was shown)", `safe${ESC}[1A${ESC}[2Kevil`, "safeevil"],
    ["private mode (alternate screen)", `${ESC}[?1049hx`, "x"],
    ["OSC 0 window title, BEL-terminated", `${ESC}]0;pwned${BEL}text`, "text"],
    ["OSC 2 window title, ST-terminated", `${ESC}]2;pwned${ESC}\\text`, "text"],
    ["OSC 52 clipboard write", `${ESC}]52;c;Y3VybCBldmlsLnNoIHwgc2g=${BEL}ok`, "ok"],
    ["OSC 8 hyperlink", `${ESC}]8;;https://evil.example${ESC}\\click${ESC}]8;;${ESC}\\`, "click"],
    ["DCS", `${ESC}Pq#0;2;0;0;0${ESC}\\x`, "x"],
    ["APC", `${ESC}_Gf=100;AAAA${ESC}\\x`, "x"],
    ["PM and SOS", `${ESC}^secret${ESC}\\${ESC}Xsecret${ESC}\\x`, "x"],
    ["ESC c full reset", `${ESC}cx`, "x"],
    ["charset switch", `${ESC}(0x`, "x"],
    ["save cursor", `${ESC}7x${ESC}8`, "x"],
    ["lone ESC at the end", `x${ESC}`, "x"],
    ["8-bit CSI (U+009B)", "\u009b2Jx", "x"],
    ["8-bit OSC (U+009D) with ST (U+009C)", "\u009d0;title\u009cx", "x"],
    ["other C1 controls", "a\u0085b\u0099c\u0080", "abc"],
    ["BEL", `ding${BEL}`, "ding"],
    ["backspace used to hide text", "rm -rf /\b\b\b\b\b\b\b\bls", "rm -rf /ls"],
    ["NUL, VT, FF, DEL", "a\u0000b\u000bc\u000cd\u007fe", "abcde"],
    ["bidi overrides (Trojan Source)", "admin\u202e\u2066 // check\u2069\u2066", "admin // check"],
    ["all bidi embeddings and isolates", "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069x", "x"],
  ])("strips %s", (_name, input, expected) => {
    expect(sanitizeForTerminal(input)).toBe(expected);
  });

  it("drops an unterminated OSC up to the end of its line only", () => {
    expect(sanitizeForTerminal(`${ESC}]0;title never ends\nnext line`)).toBe("\nnext line");
  });

  it("turns carriage returns into newlines so nothing is overwritten", () => {
    expect(sanitizeForTerminal("ok\r\n")).toBe("ok\n");
    expect(sanitizeForTerminal("10%\r50%\r100%")).toBe("10%\n50%\n100%");
    expect(sanitizeForTerminal("harmless\rrm -rf /")).toBe("harmless\nrm -rf /");
  });

  it("is safe on chunks that split a sequence", () => {
    const joined = sanitizeForTerminal(`a${ESC}[3`) + sanitizeForTerminal("1mb");
    expect(joined).not.toContain(ESC);
  });
});
