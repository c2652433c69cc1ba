/**
 * An MCP session as a run: the real MCP server over the SDK's in-memory transport, the real
 * transcript writer, and the transcript read back the way `run --continue` and `--fork` read it.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { McpRun, type SessionCheckpoints } from "../../../src/mcp/mcp-run.js";
import { createMcpServer } from "../../../src/mcp/mcp-server.js";
import { createBashTool } from "../../../src/tools/bash-tool.js";
import { parseConversation, readConversation } from "../../../src/transcript/read-conversation.js";
import { createTranscript } from "../../../src/transcript/transcript.js";
import { MCP_SESSION_TASK } from "../../../src/transcript/transcript-records.js";
import { FakeEgressMonitor, FakeSandbox } from "../../support/fake-sandbox.js";

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "harness-mcp-run-"));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

type Row = Record<string, unknown> & { type: string };
const rows = (path: string): Row[] =>
  readFileSync(path, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Row);

/** A session as `harness mcp` wires it, with checkpoints that log what they are asked. */
async function session(path: string, sandbox = new FakeSandbox()) {
  const log: string[] = [];
  const checkpoints: SessionCheckpoints = {
    start: async () => {
      log.push("checkpoint 0");
    },
    afterToolCall: (call) => log.push(`checkpoint after ${call.id}`),
    settle: async () => {},
    close: async () => {
      log.push("closed");
    },
  };
  const transcript = createTranscript(path, { runStart: { workspace: "/srv/project", mcpSession: true } });
  const tools = [createBashTool(sandbox, { timeoutMs: 5000 })];
  const run = new McpRun({
    transcript,
    start: { task: MCP_SESSION_TASK, system: "sys", tools: ["bash"], limits: { maxTurns: 0, maxTokens: 0 } },
    openCheckpoints: async () => {
      log.push("opened");
      return checkpoints;
    },
  });
  const server = createMcpServer({ tools, events: run.events, beforeCall: () => run.begin() });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.server.connect(serverSide);
  const client = new Client({ name: "t", version: "1" });
  await client.connect(clientSide);
  const end = async () => {
    await client.close();
    await run.closeCheckpoints();
    run.end("submitted", `MCP session ended after ${run.calls} tool call(s).`);
  };
  return { client, run, log, end };
}

describe("an MCP session as a run", () => {
  it("leaves nothing behind when the client only lists the tools (a health check)", async () => {
    const path = join(dir, "health.jsonl");
    const { client, log, end, run } = await session(path);
    await client.listTools();
    await client.ping();
    await end();
    expect(run.started).toBe(false);
    expect(existsSync(path)).toBe(false);
    expect(log).toEqual([]);
  });

  it("begins at the first call: run_start, the checkpoint before it, one after each call, run_end", async () => {
    const path = join(dir, "calls.jsonl");
    const { client, log, end } = await session(path);
    await client.listTools();
    expect(existsSync(path)).toBe(false);
    await client.callTool({ name: "bash", arguments: { command: "echo one" } });
    await client.callTool({ name: "bash", arguments: { command: "echo two" } });
    await end();
    expect(log).toEqual([
      "opened",
      "checkpoint 0",
      "checkpoint after mcp-1",
      "checkpoint after mcp-2",
      "closed",
    ]);
    expect(rows(path).map((row) => row.type)).toEqual([
      "run_start",
      "tool_call",
      "tool_result",
      "tool_call",
      "tool_result",
      "run_end",
    ]);
    expect(rows(path)[0]).toMatchObject({ task: MCP_SESSION_TASK, mcpSession: true });
    expect(rows(path).at(-1)).toMatchObject({ finalText: "MCP session ended after 2 tool call(s)." });
  });

  it("begins at a connection through the gateway too, but not once the session has ended", async () => {
    const egress = new FakeEgressMonitor();
    const path = join(dir, "egress.jsonl");
    const { run, end } = await session(path);
    egress.subscribe((record) => run.onEgress(record));
    egress.emit({ host: "example.com" });
    expect(rows(path).map((row) => row.type)).toEqual(["run_start", "egress"]);

    const idle = join(dir, "idle.jsonl");
    const other = await session(idle);
    await other.end();
    egress.subscribe((record) => other.run.onEgress(record));
    egress.emit();
    expect(existsSync(idle)).toBe(false);
    await end();
  });

  it("reads back as a run with no conversation, which --continue refuses by name and a fork starts empty", async () => {
    const path = join(dir, "read.jsonl");
    const { client, end } = await session(path);
    await client.callTool({ name: "bash", arguments: { command: "echo one" } });
    await client.callTool({ name: "bash", arguments: { command: "echo two" } });
    await end();
    // Before: "line 3: tool_result 'mcp-1' answers no tool_use of the assistant turn before it".
    const read = await readConversation(path);
    expect(read).toMatchObject({
      runs: 1,
      ended: true,
      mcpSession: true,
      messages: [],
      workspace: "/srv/project",
    });
    const cut = await readConversation(path, { steps: 1, notRunText: "not run" });
    expect(cut.messages).toEqual([]);
  });
});

describe("reading a transcript with MCP sessions", () => {
  const start = (fields: Record<string, unknown>) => ({
    type: "run_start",
    time: "2026-01-01T00:00:00.000Z",
    system: "s",
    tools: ["bash"],
    limits: { maxTurns: 0, maxTokens: 0 },
    ...fields,
  });
  const call = (id: string) => [
    { type: "tool_call", time: "2026-01-01T00:00:01.000Z", id, name: "bash", input: { command: "ls" } },
    {
      type: "tool_result",
      time: "2026-01-01T00:00:02.000Z",
      id,
      name: "bash",
      isError: false,
      content: "a (out-7)",
    },
  ];
  const jsonl = (records: readonly object[]) => records.map((r) => `${JSON.stringify(r)}\n`).join("");

  it("knows a session written before run_start said so, by its task", () => {
    const read = parseConversation(jsonl([start({ task: MCP_SESSION_TASK }), ...call("mcp-1")]));
    expect(read).toMatchObject({ mcpSession: true, messages: [], highestOutputId: 7 });
  });

  it("keeps an agent run's conversation around an MCP session in the same file", () => {
    const agent = [
      start({ task: "fix it" }),
      { type: "user", time: "2026-01-01T00:00:00.000Z", text: "fix it" },
      {
        type: "assistant",
        time: "2026-01-01T00:00:00.000Z",
        id: "msg_1",
        model: "m",
        stopReason: "end_turn",
        content: [{ type: "text", text: "Done." }],
        usage: { inputTokens: 1, outputTokens: 1 },
      },
    ];
    const mixed = parseConversation(
      jsonl([...agent, start({ mcpSession: true, task: "x" }), ...call("mcp-1")]),
    );
    expect(mixed.mcpSession).toBe(true);
    expect(mixed.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
    const after = parseConversation(
      jsonl([start({ mcpSession: true, task: "x" }), ...call("mcp-1"), ...agent]),
    );
    expect(after.mcpSession).toBe(false);
    expect(after.messages.map((m) => m.role)).toEqual(["user", "assistant"]);
  });
});
