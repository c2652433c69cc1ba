import { describe, expect, it } from "vitest";
import { formatByteCount, formatBytes, formatDuration } from "../../../src/text/units.js";

describe("formatBytes", () => {
  it.each([
    [0, "0 B"],
    [1023, "1023 B"],
    [1024, "1.0 KiB"],
    [7_577, "7.4 KiB"],
    [10 * 1024, "10 KiB"],
    [500 * 1024 ** 2, "500 MiB"],
    [1.5 * 1024 ** 3, "1.5 GiB"],
    [3 * 1024 ** 5, "3072 TiB"],
  ])("%d → %s", (bytes, shown) => {
    expect(formatBytes(bytes)).toBe(shown);
  });
});

describe("formatByteCount", () => {
  it("keeps every byte, with thousands separators", () => {
    expect(formatByteCount(1)).toBe("1 byte");
    expect(formatByteCount(1_234_567)).toBe("1,234,567 bytes");
  });
});

describe("formatDuration", () => {
  it.each([
    [null, "-"],
    [850.4, "850ms"],
    [4_200, "4.2s"],
    [185_000, "3m05s"],
  ])("%s → %s", (ms, shown) => {
    expect(formatDuration(ms)).toBe(shown);
  });
});
