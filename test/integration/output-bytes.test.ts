/**
 * Issue 35: output that is not text reaches the model with every such byte visible and the loss
 * said, on both command paths' shared decoding (the executor's and the per-call path's outcome).
 */
import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import { createBashTool } from "../../src/tools/bash-tool.js";
import { skipDocker } from "../support/docker-available.js";
import { makeWorkspace } from "../support/workspace.js";

describe.skipIf(skipDocker)("output bytes that are not text", () => {
  it("show as \\xNN escapes with their values, and the tool result says how many and how to get them", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const result = await sandbox.exec("printf 'a\\000b\\377c'; printf 'e\\033[1m\\376' >&2");
    expect(result.stdout).toBe("a\\x00b\\xffc");
    expect(result.stderr).toBe("e\u001b[1m\\xfe");
    expect(result.notTextBytes).toEqual({ stdout: 2, stderr: 1 });

    const bash = createBashTool(sandbox, { timeoutMs: 30_000 });
    const { content } = await bash.run(
      bash.parse({ command: "printf 'a\\000b\\377c'; printf 'e\\033[1m\\376' >&2" }),
      {},
    );
    expect(content).toContain("<stdout>\na\\x00b\\xffc\n</stdout>");
    expect(content).toContain("<stderr>\ne\\x1b[1m\\xfe\n</stderr>");
    // The ESC the tool layer escapes is counted with the sandbox's \xfe.
    expect(content).toContain("(stdout: 2 bytes; stderr: 2 bytes)");
    expect(content).toContain("`… | od -c`");
  });

  it("plain text gets no such note", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const bash = createBashTool(sandbox, { timeoutMs: 30_000 });
    const { content } = await bash.run(bash.parse({ command: "printf 'é\\tb\\n€\\n'" }), {});
    expect(content).toBe("<stdout>\né\tb\n€\n</stdout>\n<exit_code>0</exit_code>");
  });
});
