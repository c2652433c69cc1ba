import { describe, expect, it } from "vitest";
import { truncateMiddle } from "../../../src/tools/truncate.js";

describe("truncateMiddle", () => {
  it("leaves short text alone", () => {
    expect(truncateMiddle("hello", 10)).toEqual({ text: "hello", elidedChars: 0 });
    expect(truncateMiddle("x".repeat(10), 10).elidedChars).toBe(0);
  });

  it("keeps the head and the tail and says how much was cut", () => {
    const input = `HEAD${"x".repeat(100_000)}TAIL`;
    const { text, elidedChars } = truncateMiddle(input, 1000);
    expect(text.startsWith("HEAD")).toBe(true);
    expect(text.endsWith("TAIL")).toBe(true);
    expect(elidedChars).toBe(input.length - 1000);
    expect(text).toContain(`[… ${(input.length - 1000).toLocaleString("en-US")} characters elided …]`);
    expect(text.length).toBeLessThan(1100);
  });

  it("cuts only past the cap", () => {
    expect(truncateMiddle("y".repeat(20_000), 20_000).elidedChars).toBe(0);
    expect(truncateMiddle("y".repeat(20_001), 20_000).elidedChars).toBe(1);
  });

  it("never splits a surrogate pair", () => {
    const { text } = truncateMiddle("😀".repeat(50), 11);
    expect(text).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
    expect(text).not.toMatch(/(?<![\ud800-\udbff])[\udc00-\udfff]/);
  });
});
