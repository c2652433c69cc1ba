import { describe, expect, it } from "vitest";
import { addUsage, totalTokens, ZERO_USAGE } from "../../../src/model/usage.js";

const usage = { inputTokens: 1, outputTokens: 2, cacheReadInputTokens: 3, cacheCreationInputTokens: 4 };

describe("usage", () => {
  it("adds field by field without changing its arguments", () => {
    const sum = addUsage(usage, usage);
    expect(sum).toEqual({
      inputTokens: 2,
      outputTokens: 4,
      cacheReadInputTokens: 6,
      cacheCreationInputTokens: 8,
    });
    expect(usage.inputTokens).toBe(1);
    expect(addUsage(ZERO_USAGE, usage)).toEqual(usage);
  });

  it("counts every billed token in the total", () => {
    expect(totalTokens(usage)).toBe(10);
    expect(totalTokens(ZERO_USAGE)).toBe(0);
  });

  it("has a zero value nobody can change", () => {
    expect(Object.isFrozen(ZERO_USAGE)).toBe(true);
  });
});
