import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { describe, expect, it } from "vitest";
import { createMcpServer } from "../../../src/mcp/mcp-server.js";
import { createBashTool } from "../../../src/tools/bash-tool.js";
import { createBlocklist } from "../../../src/tools/blocklist.js";
import type { ToolCall, ToolResult } from "../../../src/tools/tool.js";
import { FakeSandbox, hang } from "../../support/fake-sandbox.js";

async function connect(sandbox: FakeSandbox, seen: Array<[ToolCall, ToolResult]> = []) {
  const tools = [createBashTool(sandbox, { timeoutMs: 5000, blocklist: createBlocklist({}) })];
  const session = createMcpServer({
    tools,
    events: { onToolResult: (call, result) => seen.push([call, result]) },
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await session.server.connect(serverSide);
  const client = new Client({ name: "t", version: "1" });
  await client.connect(clientSide);
  return { client, session };
}

describe("the MCP server", () => {
  it("answers bash with text and structured content, and tells the listeners", async () => {
    const seen: Array<[ToolCall, ToolResult]> = [];
    const { client } = await connect(new FakeSandbox([{ stdout: "a\n", stderr: "b\n", exitCode: 2 }]), seen);
    const result = (await client.callTool({ name: "bash", arguments: { command: "x" } })) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(result.structuredContent).toMatchObject({ stdout: "a\n", stderr: "b\n", exitCode: 2 });
    expect(seen.map(([call, res]) => [call.id, call.name, res.isError])).toEqual([["mcp-1", "bash", true]]);
  });

  it("runs no blocked command, and answers an unknown tool or bad input with an error result", async () => {
    const sandbox = new FakeSandbox();
    const { client } = await connect(sandbox);
    const blocked = (await client.callTool({
      name: "bash",
      arguments: { command: "sudo ls" },
    })) as CallToolResult;
    expect(blocked.isError).toBe(true);
    expect(JSON.stringify(blocked.content)).toContain("Blocked");
    const unknown = (await client.callTool({ name: "nope", arguments: {} })) as CallToolResult;
    expect(unknown).toMatchObject({
      isError: true,
      content: [{ type: "text", text: "Error: Tool 'nope' not found" }],
    });
    const bad = (await client.callTool({ name: "bash", arguments: { command: "" } })) as CallToolResult;
    expect(bad.isError).toBe(true);
    expect(sandbox.commands).toEqual([]);
  });

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
});
