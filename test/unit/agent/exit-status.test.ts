import { describe, expect, it } from "vitest";
import { EXIT_CODES, type ExitStatus, exitCodeFor } from "../../../src/agent/exit-status.js";

describe("exitCodeFor", () => {
  it.each([
    ["submitted", 0],
    ["error", 1],
    ["step_limit", 3],
    ["cost_limit", 3],
    ["refusal", 4],
    ["format_errors", 4],
    ["context_window", 4],
    ["canceled", 130],
  ] as Array<[ExitStatus, number]>)("%s → %i", (status, code) => {
    expect(exitCodeFor(status)).toBe(code);
  });

  it("never uses 2, which the CLI keeps for usage and config errors", () => {
    expect(Object.values(EXIT_CODES)).not.toContain(2);
  });
});
