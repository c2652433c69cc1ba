import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { E2E_KEY, E2E_MODEL, useFakeApi } from "../support/fake-api-fixture.js";
import { textReply, toolUseReply } from "../support/fake-messages-api.js";
import { CLI_PATH, runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";

/** The interactive prompt on a real terminal (script(1)), where Ctrl-C arrives as a key press. */
describe.skipIf(skipDocker)("harness run prompt on a terminal", () => {
  const fake = useFakeApi();

  it("Ctrl-C kills the running command in the container, ends the turn, and the prompt goes on", async () => {
    using ws = makeWorkspace();
    fake.api.enqueue(toolUseReply("bash", { command: "sleep 600" }), textReply("Still here."));
    const child = spawn(
      "script",
      ["-qec", `${process.execPath} ${CLI_PATH} run --workspace ${ws.path}`, "/dev/null"],
      {
        env: {
          ...process.env,
          ANTHROPIC_API_KEY: E2E_KEY,
          MODEL_ID: E2E_MODEL,
          ANTHROPIC_BASE_URL: fake.api.url,
          NO_COLOR: "1",
        },
        stdio: ["pipe", "pipe", "pipe"],
      },
    );
    let out = "";
    const waitFor = (text: string) =>
      new Promise<void>((resolve) => {
        const check = () => {
          if (out.includes(text)) {
            child.stdout.off("data", check);
            resolve();
          }
        };
        child.stdout.on("data", check);
        check();
      });
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
    await waitFor("harness> ");
    child.stdin.write("wait a long time\r");
    await waitFor("$ sleep 600");
    child.stdin.write("\u0003");
    await waitFor("cancel");
    const ps = await runCli(["exec", "--workspace", ws.path, "--", "ps -eo args"]);
    expect(ps.stdout).not.toContain("sleep 600");
    out = "";
    child.stdin.write("are you there?\r");
    await waitFor("Still here.");
    child.stdin.write("exit\r");
    expect(await closed).toBe(0);
    const second = fake.api.requests[1]?.body.messages ?? [];
    // The cancelled call was answered, and the next prompt went out in a valid conversation.
    expect(JSON.stringify(second)).toMatch(/cancel/i);
    await runCli(["rm", "--workspace", ws.path]);
  });

  it("Ctrl-D at the prompt ends the run, and harness's next line starts a line of its own", async () => {
    using ws = makeWorkspace();
    const state = mkdtempSync(join(tmpdir(), "harness-state-"));
    const child = spawn(
      "script",
      ["-qec", `${process.execPath} ${CLI_PATH} run --workspace ${ws.path}`, "/dev/null"],
      {
        env: {
          ...process.env,
          ANTHROPIC_API_KEY: E2E_KEY,
          MODEL_ID: E2E_MODEL,
          ANTHROPIC_BASE_URL: fake.api.url,
          NO_COLOR: "1",
          XDG_STATE_HOME: state,
        },
        stdio: ["pipe", "pipe", "pipe"],
      },
    );
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
    });
    const closed = new Promise<number | null>((resolve) => child.on("close", resolve));
    await new Promise<void>((resolve) => {
      const check = () => {
        if (!out.includes("harness> ")) return;
        child.stdout.off("data", check);
        resolve();
      };
      child.stdout.on("data", check);
      check();
    });
    child.stdin.write("\u0004");
    expect(await closed).toBe(0);
    // readline puts the cursor back after the prompt (CSI n G) before the line ends.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the terminal's own sequence
    expect(out).toMatch(/harness> (?:\u001b\[\d+G)?\r?\nharness: transcript: /);
    rmSync(state, { recursive: true, force: true });
    await runCli(["rm", "--workspace", ws.path]);
  });
});
