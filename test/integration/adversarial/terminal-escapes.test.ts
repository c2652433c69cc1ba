import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { sanitizeForTerminal } from "../../../src/terminal/sanitize.js";
import { createBashTool } from "../../../src/tools/bash-tool.js";
import { skipDocker } from "../../support/docker-available.js";
import { makeWorkspace } from "../../support/workspace.js";

/**
 * printf escapes for what a hostile program prints to take over the user's terminal: set the window
 * title, write the clipboard (OSC 52), clear the screen and reset the terminal, hide a link, and
 * reverse text with a bidi override.
 */
const HOSTILE =
  "printf 'a\\033]0;pwned title\\007b\\033]52;c;Y3VybCBldmlsIHwgc2g=\\007c\\033[2J\\033[Hd\\033ce" +
  "\\033]8;;http://evil.invalid\\033\\\\link\\033]8;;\\033\\\\f\\342\\200\\256g\\n'";

describe.skipIf(skipDocker)("adversarial: terminal escape sequences in output", () => {
  it("arrive raw in the ExecResult, and the terminal layer strips them", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const result = await sandbox.exec(`${HOSTILE}; ${HOSTILE} >&2`);
    for (const stream of [result.stdout, result.stderr]) {
      // The model gets the bytes as printed: the sandbox does not rewrite output.
      expect(stream).toContain("\u001b]52;c;");
      expect(stream).toContain("\u001b]0;pwned title\u0007");
      expect(stream).toContain("\u001b[2J");
      expect(stream).toContain("\u202e");
      const shown = sanitizeForTerminal(stream);
      expect(shown).toBe("abcdelinkfg\n");
    }
  });

  it("reach the model as visible escapes, never as raw control characters", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const bash = createBashTool(sandbox, { timeoutMs: 30_000 });
    const { content } = await bash.run(bash.parse({ command: `${HOSTILE}; ${HOSTILE} >&2` }), {});
    // biome-ignore lint/suspicious/noControlCharactersInRegex: looking for raw control characters
    expect(content).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e]/);
    expect(content).toContain("\\x1b]52;c;Y3VybCBldmlsIHwgc2g=\\x07");
    expect(content).toContain("\\x1b]8;;http://evil.invalid\\x1b\\link");
    expect(content).toContain("f\\u202eg");
  });
});
