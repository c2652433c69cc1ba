import { format } from "node:util";
import createDebug from "debug";
import { afterEach, describe, expect, it } from "vitest";
import { sanitizeDebugLogs } from "../../../src/terminal/debug-log.js";

const original = createDebug.formatArgs;

describe("sanitizeDebugLogs", () => {
  afterEach(() => {
    createDebug.formatArgs = original;
  });

  it("shows the control characters of logged values as escapes", () => {
    sanitizeDebugLogs();
    const log = createDebug("harness-test:debug-log");
    log.enabled = true;
    (log as typeof log & { useColors: boolean }).useColors = false;
    let line = "";
    log.log = (...args: unknown[]) => {
      line = format(...args);
    };
    log("relay stderr: %s", "x\u001b]52;c;ZXZpbA==\u0007\u009b2J\u202e\nharness: all clear");
    expect(line).toMatch(
      /harness-test:debug-log relay stderr: x\\x1b\]52;c;ZXZpbA==\\x07\\x9b2J\\u202e\\nharness: all clear$/,
    );
  });
});
