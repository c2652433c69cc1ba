import { describe, expect, it } from "vitest";
import { egressDenialLines } from "../../../src/cli/exec/exec-command.js";

describe("egressDenialLines (harness exec's stderr)", () => {
  it("names each distinct refusal once, on one line, controls shown as escapes", () => {
    const reason = "not on the allowlist (--allow-host evil.example.net would allow it)";
    expect(
      egressDenialLines([
        { host: "evil.example.net", port: 443, reason },
        { host: "evil.example.net", port: 443, reason },
        { host: "203.0.113.7", port: 80, reason: "IP addresses are refused unless listed exactly" },
        { host: "x\u001b[2Jy", port: 443, reason: "two\nlines" },
      ]),
    ).toEqual([
      `network: refused evil.example.net:443 (${reason})`,
      "network: refused 203.0.113.7:80 (IP addresses are refused unless listed exactly)",
      "network: refused x\\x1b[2Jy:443 (two lines)",
    ]);
    expect(egressDenialLines([])).toEqual([]);
  });
});
