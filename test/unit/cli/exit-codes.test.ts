import { describe, expect, it } from "vitest";
import type { ExitStatus } from "../../../src/agent/exit-status.js";
import { EXIT, exitCodeFor } from "../../../src/cli/exit-codes.js";

/** README "Exit codes"; a Record, so a new status without a row here fails to compile. */
const EXPECTED: Record<ExitStatus, number> = {
  submitted: 0,
  error: 1,
  step_limit: 3,
  cost_limit: 3,
  refusal: 4,
  format_errors: 4,
  context_window: 4,
  canceled: 130,
};
const statuses = Object.keys(EXPECTED) as ExitStatus[];

describe("exitCodeFor", () => {
  it.each(statuses)("%s", (status) => {
    expect(exitCodeFor(status)).toBe(EXPECTED[status]);
  });

  it("never uses 2, which the CLI keeps for usage and config errors", () => {
    expect(statuses.map(exitCodeFor)).not.toContain(EXIT.usage);
  });
});
