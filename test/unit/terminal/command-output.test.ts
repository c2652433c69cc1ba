import { describe, expect, it } from "vitest";
import { CommandOutputStream, commandLine, RESET } from "../../../src/terminal/command-output.js";
import { sanitizeForTerminal } from "../../../src/terminal/sanitize.js";

const ESC = "\u001b";

/** Everything a terminal acts on but SGR: none may come through. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: looking for raw control characters
const RAW_BUT_SGR = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f](?<!\u001b(?=\[[0-9;]{0,32}m))/u;

/** Every sequence that must stay escaped, next to plain colour. */
const HOSTILE = [
  `${ESC}]0;title${ESC}\\`, // OSC title, ST-terminated
  `${ESC}]52;c;Y3VybCBldmls${ESC}\u0007`, // OSC 52 clipboard
  `${ESC}]8;;http://evil.invalid${ESC}\\link`, // OSC 8 hidden link
  `${ESC}P1$r${ESC}\\`, // DCS
  `${ESC}[2J`, // clear screen
  `${ESC}[1A${ESC}[2K`, // cursor up, erase line
  `${ESC}[?1049h`, // private mode (alternate screen)
  `${ESC}[38:2:255:0:0m`, // colon parameters: not the strict form
  `${ESC}[6n`, // device status report: the terminal would answer on stdin
  "\u009b31m", // 8-bit CSI
  `${ESC}c`, // full reset
  `${ESC}[${"1;".repeat(20)}m`, // over 32 parameter characters
];

describe("commandLine (one line of a command's output on a terminal)", () => {
  it("lets plain SGR colour through on a colour terminal, and closes a colour left open", () => {
    expect(commandLine(`${ESC}[31mred${ESC}[0m plain`, true)).toBe(`${ESC}[31mred${ESC}[0m plain`);
    expect(commandLine(`${ESC}[1;32mPASS${ESC}[m`, true)).toBe(`${ESC}[1;32mPASS${ESC}[m`);
    expect(commandLine(`${ESC}[33mstill yellow`, true)).toBe(`${ESC}[33mstill yellow${RESET}`);
  });

  it("drops SGR without colour (NO_COLOR, not a terminal) rather than showing it as text", () => {
    expect(commandLine(`${ESC}[31mred${ESC}[0m plain`, false)).toBe("red plain");
  });

  it("shows every other control as an escape, as sanitizeForTerminal does, colour or not", () => {
    for (const sequence of HOSTILE) {
      for (const colour of [true, false]) {
        const shown = commandLine(`a${sequence}b`, colour);
        expect(shown).not.toMatch(RAW_BUT_SGR);
        expect(shown).toBe(sanitizeForTerminal(`a${sequence}b`));
      }
    }
  });

  it("never cuts a colour sequence in half when it cuts a long line", () => {
    const line = `${ESC}[31m${"x".repeat(10)}${ESC}[32m${"y".repeat(10)}`;
    expect(commandLine(line, true, 12)).toBe(`${ESC}[31m${"x".repeat(10)}${ESC}[32myy…${RESET}`);
    expect(commandLine(line, true, 10)).toBe(`${ESC}[31m${"x".repeat(10)}${ESC}[32m…${RESET}`);
    expect(commandLine(line, false, 12)).toBe(`${"x".repeat(10)}yy…`);
  });
});

describe("CommandOutputStream (harness exec's output on a terminal)", () => {
  const feed = (colour: boolean, chunks: string[]) => {
    const stream = new CommandOutputStream(colour);
    return chunks.map((chunk) => stream.write(Buffer.from(chunk))).join("") + stream.end();
  };

  it("keeps a colour sequence split across chunks whole", () => {
    expect(feed(true, ["a", ESC, "[3", "1", "mred", `${ESC}[0`, "m\n"])).toBe(`a${ESC}[31mred${ESC}[0m\n`);
  });

  it("ends with a reset when the command left a colour on, and not otherwise", () => {
    expect(feed(true, [`${ESC}[31mred\n`])).toBe(`${ESC}[31mred\n${RESET}`);
    expect(feed(true, [`${ESC}[31mred${ESC}[0m\n`])).toBe(`${ESC}[31mred${ESC}[0m\n`);
    expect(feed(true, [`${ESC}[31mred`, "\nplain\n"])).toBe(`${ESC}[31mred\nplain\n${RESET}`);
  });

  it("shows an unfinished sequence at the end as an escape, and splits no UTF-8 character", () => {
    expect(feed(true, ["x", `${ESC}[3`])).toBe("x\\x1b[3");
    const e = Buffer.from("é");
    const stream = new CommandOutputStream(true);
    expect(stream.write(e.subarray(0, 1)) + stream.write(e.subarray(1)) + stream.end()).toBe("é");
  });

  it("keeps \\r\\n split across chunks one line end", () => {
    expect(feed(true, ["a\r", "\nb\r", "c"])).toBe("a\nb\nc");
  });

  it("lets nothing but SGR through, whatever the chunking", () => {
    const text = HOSTILE.map((s) => `${ESC}[31m${s}${ESC}[0m`).join("\n");
    for (const size of [1, 2, 3, 7, 1000]) {
      const chunks: string[] = [];
      for (let i = 0; i < text.length; i += size) chunks.push(text.slice(i, i + size));
      const shown = feed(true, chunks);
      expect(shown).not.toMatch(RAW_BUT_SGR);
      expect(shown.replaceAll(`${ESC}[31m`, "").replaceAll(`${ESC}[0m`, "")).toBe(
        sanitizeForTerminal(HOSTILE.join("\n")),
      );
    }
  });
});
