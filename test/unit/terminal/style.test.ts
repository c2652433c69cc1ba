import { describe, expect, it } from "vitest";
import { colorEnabled, createStyle } from "../../../src/terminal/style.js";

const tty = { isTTY: true };
const pipe = { isTTY: false };

describe("colorEnabled", () => {
  it("colours a TTY and not a pipe", () => {
    expect(colorEnabled(tty, {})).toBe(true);
    expect(colorEnabled(pipe, {})).toBe(false);
    expect(colorEnabled({}, {})).toBe(false);
  });

  it("turns colour off when NO_COLOR is set to any value", () => {
    expect(colorEnabled(tty, { NO_COLOR: "1" })).toBe(false);
    expect(colorEnabled(tty, { NO_COLOR: "" })).toBe(false);
  });

  it("turns colour off for a dumb terminal", () => {
    expect(colorEnabled(tty, { TERM: "dumb" })).toBe(false);
  });

  it("turns colour on with FORCE_COLOR, even on a pipe or with NO_COLOR", () => {
    expect(colorEnabled(pipe, { FORCE_COLOR: "1" })).toBe(true);
    expect(colorEnabled(pipe, { FORCE_COLOR: "" })).toBe(true);
    expect(colorEnabled(tty, { FORCE_COLOR: "1", NO_COLOR: "1" })).toBe(true);
    expect(colorEnabled(tty, { FORCE_COLOR: "0" })).toBe(false);
    expect(colorEnabled(tty, { FORCE_COLOR: "false" })).toBe(false);
  });
});

describe("createStyle", () => {
  it("wraps text in SGR codes when enabled", () => {
    const style = createStyle(true);
    expect(style.command("ls")).toBe("\u001b[33mls\u001b[39m");
    expect(style.error("x")).toBe("\u001b[31mx\u001b[39m");
    expect(style.dim("x")).toBe("\u001b[2mx\u001b[22m");
  });

  it("returns text untouched when disabled", () => {
    const style = createStyle(false);
    for (const paint of Object.values(style)) expect(paint("plain")).toBe("plain");
  });
});
