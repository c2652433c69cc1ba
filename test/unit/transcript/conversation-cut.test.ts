/**
 * `run --fork RUN@N`: the conversation of a transcript cut after its Nth tool result, valid for the
 * API: the calls of that turn after the cut are answered as not run in the fork.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConfigError } from "../../../src/errors.js";
import { readConversation } from "../../../src/transcript/read-conversation.js";
import { createTranscript } from "../../../src/transcript/transcript.js";
import { fixture } from "../../support/agent-fixture.js";
import { answer, bash, toolCalls } from "../../support/scripted-model.js";
import { validateConversation } from "../../support/validate-conversation.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "harness-cut-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const NOT_RUN = "Error: not run: forked before this call.";

async function recordedRun(): Promise<string> {
  const path = join(dir, "run.jsonl");
  const f = fixture(
    [toolCalls(bash("t1", "echo 1")), toolCalls(bash("t2", "echo 2"), bash("t3", "echo 3")), answer("Done.")],
    { events: createTranscript(path) },
  );
  await f.run("count");
  return path;
}

describe("readConversation with a cut", () => {
  it("keeps the first N steps; calls of the same turn after the cut are answered as not run", async () => {
    const path = await recordedRun();
    const two = await readConversation(path, { steps: 2, notRunText: NOT_RUN });
    expect(validateConversation(two.messages)).toEqual([]);
    const text = JSON.stringify(two.messages);
    expect(text).toContain('"tool_use_id":"t1"');
    expect(text).toContain('"tool_use_id":"t2"');
    expect(text).toContain(NOT_RUN);
    expect(text).not.toContain("Done.");
    expect(two.incompleteCalls).toEqual([]);

    const one = await readConversation(path, { steps: 1, notRunText: NOT_RUN });
    expect(JSON.stringify(one.messages)).not.toContain('"t2"');
    expect(one.messages.at(-1)?.role).toBe("user");
  });

  it("refuses a cut past the recorded steps", async () => {
    const path = await recordedRun();
    await expect(readConversation(path, { steps: 4, notRunText: NOT_RUN })).rejects.toThrow(ConfigError);
  });
});
