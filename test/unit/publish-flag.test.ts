import { describe, expect, it } from "vitest";
import { ConfigError } from "../../src/errors.js";
import { parsePublishFlags } from "../../src/publish-flag.js";

describe("--publish", () => {
  it("reads PORT and PORT:HOSTPORT", () => {
    expect(parsePublishFlags(["8000", "3000:13000"])).toEqual([
      { port: 8000, hostPort: 8000 },
      { port: 3000, hostPort: 13000 },
    ]);
  });

  it("refuses anything else in one line", () => {
    for (const bad of [
      "",
      "0",
      "65536",
      "80:0",
      "a",
      "8000:",
      ":8000",
      "0x50",
      "1e3",
      "-1",
      "127.0.0.1:80:80",
    ]) {
      expect(() => parsePublishFlags([bad])).toThrow(ConfigError);
    }
    expect(() => parsePublishFlags(["8000", "9000:8000"])).toThrow("host port 8000 is given twice");
  });
});
