import { describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { E2E_KEY } from "../support/fake-api-fixture.js";
import { startFakeMessagesApi, textReply, toolUseReply } from "../support/fake-messages-api.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";
import { removesContainerOf } from "../support/workspace-container.js";

/** A model the SDK lists as deprecated: it warns before every request. */
const DEPRECATED = "claude-sonnet-4-5";

describe.skipIf(skipDocker)("the SDK's deprecation warning", () => {
  it("is printed once per run, not once per model call", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    const api = await startFakeMessagesApi({ apiKey: E2E_KEY, models: [DEPRECATED] });
    try {
      api.enqueue(
        toolUseReply("bash", { command: "true" }),
        toolUseReply("bash", { command: "true" }),
        textReply("done"),
      );
      const run = await runCli(["run", "--workspace", ws.path, "three model calls"], {
        env: { ANTHROPIC_API_KEY: E2E_KEY, MODEL_ID: DEPRECATED, ANTHROPIC_BASE_URL: api.url },
      });
      expect(run.code).toBe(0);
      expect(api.requests).toHaveLength(3);
      expect(run.stderr.split(`The model '${DEPRECATED}' is deprecated`)).toHaveLength(2);
    } finally {
      await api.close();
    }
  });
});
