import { describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { useFakeApi } from "../support/fake-api-fixture.js";
import { textReply, toolUseReply } from "../support/fake-messages-api.js";
import { spawnCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";
import { removesContainerOf, workspaceProcesses } from "../support/workspace-container.js";

/** `harness run ... | head -1`: the reader of stdout goes away while a command runs. */
describe.skipIf(skipDocker)("harness run whose stdout reader goes away", () => {
  const fake = useFakeApi();

  it("stops the command in the container and exits 141, without a stack trace", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    fake.api.enqueue(toolUseReply("bash", { command: "yes > /dev/null" }), textReply("done"));
    const cli = spawnCli(
      ["run", "--workspace", ws.path, "--output-format", "stream-json", "--timeout", "120", "keep busy"],
      { env: fake.env },
    );
    await cli.waitForStdout(/"type":"system"/);
    // As `head -1` does after its first line.
    cli.child.stdout.destroy();
    const result = await cli.done;
    expect(result.code).toBe(141);
    expect(result.stderr).not.toMatch(/EPIPE|\n\s+at /);
    expect((await workspaceProcesses(ws.path)).filter((p) => /\byes\b/.test(p))).toEqual([]);
  });
});
