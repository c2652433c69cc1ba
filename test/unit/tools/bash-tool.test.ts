import { describe, expect, it } from "vitest";
import { createBashTool } from "../../../src/tools/bash-tool.js";
import { createBlocklist } from "../../../src/tools/blocklist.js";
import { ToolError } from "../../../src/tools/tool.js";
import { FakeSandbox, hang } from "../../support/fake-sandbox.js";

const options = { timeoutMs: 120_000, blocklist: createBlocklist() };

describe("createBashTool", () => {
  it("is named bash and tells the model the facts of the sandbox", () => {
    const { definition } = createBashTool(new FakeSandbox(), options);
    expect(definition.name).toBe("bash");
    expect(definition.inputSchema.required).toEqual(["command"]);
    expect(Object.keys(definition.inputSchema.properties)).toEqual(["command", "timeout"]);
    for (const fact of [
      "sandbox container",
      "/workspace",
      "persists",
      "stdin is closed",
      "nohup",
      "> ",
      "120 s",
      "600",
    ]) {
      expect(definition.description).toContain(fact);
    }
  });

  it("validates its input with messages the model can act on", () => {
    const tool = createBashTool(new FakeSandbox(), options);
    expect(tool.parse({ command: "ls" })).toEqual({ command: "ls" });
    expect(() => tool.parse({ command: "" })).toThrow(ToolError);
    expect(() => tool.parse({ cmd: "ls" })).toThrow(/`command` must be a non-empty string/);
    expect(() => tool.parse("ls")).toThrow(ToolError);
    expect(() => tool.parse({ command: "ls", timeout: -1 })).toThrow(/positive number of seconds/);
    expect(() => tool.parse({ command: "ls", timeout: "5" })).toThrow(ToolError);
    expect(tool.parse({ command: "ls", timeout: null })).toEqual({ command: "ls" });
  });

  it("runs the command with the default timeout and formats the result", async () => {
    const sandbox = new FakeSandbox([{ stdout: "a.txt\n", exitCode: 0 }]);
    const tool = createBashTool(sandbox, options);
    const output = await tool.run(tool.parse({ command: "ls" }), {});
    expect(sandbox.calls[0]?.command).toBe("ls");
    expect(sandbox.calls[0]?.options.timeoutMs).toBe(120_000);
    expect(output.isError).toBe(false);
    expect(output.content).toBe("<stdout>\na.txt\n</stdout>\n<exit_code>0</exit_code>");
    expect(output.exec?.stdout).toBe("a.txt\n");
  });

  it("uses the model's timeout in seconds, capped at the maximum", async () => {
    const sandbox = new FakeSandbox();
    const tool = createBashTool(sandbox, { ...options, maxTimeoutMs: 300_000 });
    await tool.run(tool.parse({ command: "make", timeout: 30 }), {});
    await tool.run(tool.parse({ command: "make", timeout: 99_999 }), {});
    expect(sandbox.calls.map((call) => call.options.timeoutMs)).toEqual([30_000, 300_000]);
  });

  it("reports failure as isError, from the result's `failed`", async () => {
    const sandbox = new FakeSandbox([{ stderr: "no such file", exitCode: 2 }]);
    const tool = createBashTool(sandbox, options);
    const output = await tool.run({ command: "cat nope" }, {});
    expect(output.isError).toBe(true);
    expect(output.content).toContain("<exit_code>2</exit_code>");
  });

  it("says a timeout happened and keeps the partial output", async () => {
    const sandbox = new FakeSandbox([
      {
        stdout: "waiting…\n",
        exitCode: undefined,
        timedOut: true,
        shortMessage: "Command timed out after 120000 milliseconds",
      },
    ]);
    const output = await createBashTool(sandbox, options).run({ command: "sleep 999" }, {});
    expect(output.isError).toBe(true);
    expect(output.content).toContain("waiting…");
    expect(output.content).toContain("Command timed out after 120000 milliseconds; it was killed.");
  });

  it("does not run a blocked command and says why", async () => {
    const sandbox = new FakeSandbox();
    const output = await createBashTool(sandbox, options).run({ command: "sudo rm -rf /" }, {});
    expect(sandbox.commands).toEqual([]);
    expect(output.isError).toBe(true);
    expect(output.exec).toBeUndefined();
    expect(output.content).toMatch(
      /^Blocked: this command was not run \(harness safety rule "privilege-escalation": /,
    );
  });

  it("runs everything when given no blocklist", async () => {
    const sandbox = new FakeSandbox();
    await createBashTool(sandbox, { timeoutMs: 1000 }).run({ command: "sudo true" }, {});
    expect(sandbox.commands).toEqual(["sudo true"]);
  });

  it("passes the signal through, so aborting kills the command", async () => {
    const sandbox = new FakeSandbox([hang]);
    const controller = new AbortController();
    const running = createBashTool(sandbox, options).run(
      { command: "sleep 100" },
      { signal: controller.signal },
    );
    controller.abort();
    const output = await running;
    expect(sandbox.calls[0]?.options.signal).toBe(controller.signal);
    expect(output.isError).toBe(true);
    expect(output.exec?.isCanceled).toBe(true);
    expect(output.content).toContain("cancelled by the user");
  });
});
