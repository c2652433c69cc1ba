import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { JsonSchemaType } from "@modelcontextprotocol/sdk/validation";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { StepCheckpoints } from "../../../src/agent/agent-types.js";
import { createMcpServer, type McpServerOptions } from "../../../src/mcp/mcp-server.js";
import type { ExecOptions, ExecResult } from "../../../src/sandbox/sandbox.js";
import { createBashTool } from "../../../src/tools/bash-tool.js";
import { createBlocklist } from "../../../src/tools/blocklist.js";
import { formatExecResult } from "../../../src/tools/format-exec-result.js";
import { OutputStore } from "../../../src/tools/output-store.js";
import { createReadOutputTool } from "../../../src/tools/read-output-tool.js";
import type { ToolCall, ToolResult } from "../../../src/tools/tool.js";
import { FakeSandbox, hang, makeExecResult } from "../../support/fake-sandbox.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "harness-mcp-unit-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function connect(
  sandbox: FakeSandbox,
  options: Partial<McpServerOptions> & { seen?: Array<[ToolCall, ToolResult]> } = {},
) {
  const outputStore = new OutputStore({ dir: join(dir, "outputs"), spillAfterBytes: 100 });
  const tools = [
    createBashTool(sandbox, { timeoutMs: 5000, blocklist: createBlocklist({}), outputStore }),
    createReadOutputTool(outputStore),
  ];
  const seen = options.seen ?? [];
  const session = createMcpServer({
    tools,
    events: { onToolResult: (call, result) => seen.push([call, result]) },
    ...options,
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await session.server.connect(serverSide);
  const client = new Client({ name: "t", version: "1" });
  await client.connect(clientSide);
  // The SDK client checks structured content against the declared schema once it has the tools.
  const { tools: listed } = await client.listTools();
  const bash = listed.find((tool) => tool.name === "bash");
  const call = async (args: Record<string, unknown>, name = "bash") =>
    (await client.callTool({ name, arguments: args })) as CallToolResult;
  return { client, session, bash, call };
}

function text(result: CallToolResult): string {
  return result.content.map((block) => (block.type === "text" ? block.text : "")).join("");
}

/** A command whose output the sandbox cut (it printed `bytes` bytes, the fake keeps 40). */
function cutOutput(bytes: number, exitCode: number) {
  return (_command: string, options: ExecOptions): Partial<ExecResult> => {
    const whole = "x".repeat(bytes);
    void options.onOutput?.("stdout", Buffer.from(whole));
    return {
      stdout: `${whole.slice(0, 20)}\n[… cut …]\n${whole.slice(-20)}`,
      stdoutBytes: bytes,
      isTruncated: true,
      exitCode,
    };
  };
}

/** A gate a fake command waits on: its start is seen, its end is the test's to give. */
function gate() {
  let open = () => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

describe("the MCP server's results", () => {
  it("answer bash with the text harness run gives the model, and nothing a host would show instead", async () => {
    const seen: Array<[ToolCall, ToolResult]> = [];
    const answer = { stdout: "a\nb\n", stderr: "warn\n", exitCode: 2 };
    const { call, bash } = await connect(new FakeSandbox([answer]), { seen });
    expect(bash?.outputSchema).toBeUndefined();
    const result = await call({ command: "x" });
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toBeUndefined();
    expect(result.content).toEqual([
      { type: "text", text: formatExecResult(makeExecResult({ command: "x", ...answer })) },
    ]);
    expect(text(result)).toBe(
      "<stdout>\na\nb\n</stdout>\n<stderr>\nwarn\n</stderr>\n<exit_code>2</exit_code>",
    );
    expect(seen.map(([c, r]) => [c.id, c.name, r.isError])).toEqual([["mcp-1", "bash", true]]);
  });

  it("name the saved output's id in the text when a successful or failed command's output was cut", async () => {
    const { call } = await connect(new FakeSandbox([cutOutput(5000, 0), cutOutput(6000, 1)]));
    for (const [result, id] of [
      [await call({ command: "big" }), "out-1"],
      [await call({ command: "big; false" }), "out-2"],
    ] as const) {
      expect(text(result)).toContain(`The full output was saved as ${id} (stdout:`);
      const page = await call({ id, grep: "^x+$" }, "read_output");
      expect(page.isError).toBe(false);
    }
  });

  it("with structuredContent, carry fields valid against the declared schema, the output id when cut", async () => {
    const sandbox = new FakeSandbox([
      { stdout: "ok\n", exitCode: 0 },
      cutOutput(5000, 0),
      cutOutput(5000, 3),
      // Killed on its timeout: the code of the signal, or none when its end was not seen.
      { stdout: "partial\n", exitCode: 143, timedOut: true, shortMessage: "Command timed out after 1000 ms" },
      { exitCode: undefined, timedOut: true, shortMessage: "Command timed out after 1000 ms" },
      { stdout: "", exitCode: 0, background: [{ command: "sleep 100", ageSeconds: 3 }] },
    ]);
    const { call, bash } = await connect(sandbox, { structuredContent: true });
    expect(bash?.outputSchema).toBeDefined();
    const valid = new AjvJsonSchemaValidator().getValidator((bash?.outputSchema ?? {}) as JsonSchemaType);
    const results: CallToolResult[] = [];
    for (const command of ["ok", "cut", "cut; exit 3", "slow", "slower", "bg"])
      results.push(await call({ command }));
    for (const result of results) {
      expect(valid(result.structuredContent)).toMatchObject({ valid: true });
      // Text first, for people and for models: the same text as without structured content.
      expect(result.content[0]).toMatchObject({ type: "text", text: expect.stringContaining("<exit_code>") });
    }
    const [ok, cut, cutFailed, timedOut, noCode, bg] = results.map((r) => r.structuredContent);
    expect(ok).toMatchObject({ stdout: "ok\n", exitCode: 0, truncated: false });
    expect(ok).not.toHaveProperty("outputId");
    expect(cut).toMatchObject({ truncated: true, exitCode: 0, outputId: "out-2" });
    expect(cutFailed).toMatchObject({ truncated: true, exitCode: 3, outputId: "out-3" });
    for (const [structured, result] of [
      [cut, results[1]],
      [cutFailed, results[2]],
    ] as const)
      expect(text(result as CallToolResult)).toContain(`saved as ${String(structured?.["outputId"])}`);
    expect(timedOut).toMatchObject({ exitCode: 143, timedOut: true });
    expect(noCode).toMatchObject({ exitCode: null, timedOut: true });
    expect(bg).toMatchObject({ background: [{ command: "sleep 100", ageSeconds: 3 }] });
  });

  it("runs no blocked command, and answers an unknown tool or bad input with an error result", async () => {
    const sandbox = new FakeSandbox();
    const { call } = await connect(sandbox, { structuredContent: true });
    const blocked = await call({ command: "sudo ls" });
    expect(blocked.isError).toBe(true);
    expect(text(blocked)).toContain("Blocked");
    expect(await call({}, "nope")).toMatchObject({
      isError: true,
      content: [{ type: "text", text: "Error: Tool 'nope' not found" }],
    });
    expect((await call({ command: "" })).isError).toBe(true);
    expect(sandbox.commands).toEqual([]);
  });
});

describe("the MCP server's calls", () => {
  it("kills the command when the client cancels the call", async () => {
    const sandbox = new FakeSandbox(hang);
    const { client, session } = await connect(sandbox);
    const abort = new AbortController();
    const pending = client.callTool({ name: "bash", arguments: { command: "sleep 100" } }, undefined, {
      signal: abort.signal,
    });
    await new Promise((resolve) => setImmediate(resolve));
    abort.abort();
    await expect(pending).rejects.toThrow();
    await session.idle();
    expect(sandbox.calls[0]?.options.signal?.aborted).toBe(true);
  });

  it("answers other requests while a call runs, and runs calls one at a time in the order they came", async () => {
    const order: string[] = [];
    const first = gate();
    const sandbox = new FakeSandbox(async (command) => {
      order.push(`${command} starts`);
      if (command === "first") await first.opened;
      order.push(`${command} ends`);
      return { stdout: `${command}\n` };
    });
    const { client, call } = await connect(sandbox);
    const answers = [call({ command: "first" }), call({ command: "second" }), call({ command: "third" })];
    await expect.poll(() => order).toEqual(["first starts"]);
    // The connection is not held up by the running call.
    await client.ping();
    expect((await client.listTools()).tools.length).toBe(2);
    expect(order).toEqual(["first starts"]);
    first.open();
    const results = await Promise.all(answers);
    expect(results.map(text)).toEqual(
      ["first", "second", "third"].map((c) => `<stdout>\n${c}\n</stdout>\n<exit_code>0</exit_code>`),
    );
    expect(order).toEqual([
      "first starts",
      "first ends",
      "second starts",
      "second ends",
      "third starts",
      "third ends",
    ]);
  });

  it("never runs a call the client cancelled while it waited for its turn", async () => {
    const first = gate();
    const sandbox = new FakeSandbox(async (command) => {
      if (command === "first") await first.opened;
      return {};
    });
    const seen: Array<[ToolCall, ToolResult]> = [];
    const { client, call, session } = await connect(sandbox, { seen });
    const running = call({ command: "first" });
    const abort = new AbortController();
    const waiting = client.callTool({ name: "bash", arguments: { command: "waits" } }, undefined, {
      signal: abort.signal,
    });
    const after = call({ command: "after" });
    await expect.poll(() => sandbox.commands).toEqual(["first"]);
    abort.abort();
    await expect(waiting).rejects.toThrow();
    first.open();
    await Promise.all([running, after]);
    await session.idle();
    expect(sandbox.commands).toEqual(["first", "after"]);
    expect(seen.map(([c, r]) => [c.id, r.isError, r.content.slice(0, 24)])).toEqual([
      ["mcp-1", false, "(no output)\n<exit_code>0"],
      ["mcp-2", true, "Error: cancelled by user"],
      ["mcp-3", false, "(no output)\n<exit_code>0"],
    ]);
  });

  it("asks beforeCall at each call's turn, never for a connection that only lists the tools", async () => {
    const log: string[] = [];
    const checkpoints: StepCheckpoints = {
      start: async () => {},
      afterToolCall: (call) => log.push(`checkpoint after ${call.id}`),
      settle: async () => {
        log.push("settle");
      },
    };
    const beforeCall = async () => {
      log.push("before");
      return checkpoints;
    };
    const idle = await connect(new FakeSandbox(), { beforeCall });
    await idle.client.ping();
    expect(log).toEqual([]);

    const sandbox = new FakeSandbox(async (command) => {
      log.push(`run ${command}`);
      return {};
    });
    const { call } = await connect(sandbox, { beforeCall });
    await Promise.all([call({ command: "a" }), call({ command: "b" })]);
    expect(log).toEqual([
      "before",
      "settle",
      "run a",
      "checkpoint after mcp-1",
      "before",
      "settle",
      "run b",
      "checkpoint after mcp-2",
    ]);
  });
});
