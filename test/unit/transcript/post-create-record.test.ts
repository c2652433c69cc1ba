import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTranscript } from "../../../src/transcript/transcript.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "harness-transcript-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe("the devcontainer's postCreateCommand in the transcript", () => {
  it("is in the session's first run_start only", () => {
    const path = join(dir, "run.jsonl");
    const postCreate = {
      command: "make setup",
      user: "1001:1001",
      stdout: "ok\n",
      stderr: "",
      exitCode: 0,
      durationMs: 12,
      timedOut: false,
    };
    const transcript = createTranscript(path, { postCreate });
    const info = { task: "t", system: "s", tools: ["bash"], limits: { maxTurns: 1, maxTokens: 1 } };
    transcript.onRunStart(info);
    transcript.onRunStart(info);
    transcript.close();
    const rows = readFileSync(path, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(rows[0]?.["postCreate"]).toEqual(postCreate);
    expect(rows[1]?.["postCreate"]).toBeUndefined();
  });
});
