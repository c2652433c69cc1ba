/**
 * harness's tools as a Model Context Protocol server: each `tools/call` runs one tool on the sandbox
 * exactly as `harness run` would for the model (same tools, same blocklist, same transcript records),
 * so whatever agent drives harness over MCP gets the same boundary.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  type CallToolRequest,
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
  type Tool as McpTool,
} from "@modelcontextprotocol/sdk/types.js";
import type { AgentEvents } from "../agent/events.js";
import { combineEvents } from "../agent/events.js";
import { runToolCalls } from "../agent/tool-turn.js";
import type { Tool } from "../tools/tool.js";
import { HARNESS_VERSION } from "../version.js";
import { EXEC_OUTPUT_SCHEMA, execStructured } from "./exec-structured.js";

export interface McpServerOptions {
  /** The tools to offer. */
  tools: readonly Tool[];
  /** Listeners for every call and its result (the transcript). */
  events?: AgentEvents;
  /** Text the client may show its model: what the sandbox is (from the system prompt). */
  instructions?: string;
  /**
   * Called when a tool found the sandbox failed for good (a `SandboxError`): the call's result already
   * says so. Contract: must not throw.
   */
  onFatal?: (error: Error) => void;
}

/** Tools whose results carry the command's fields as structured content (see exec-structured.ts). */
const STRUCTURED_TOOLS = new Set(["bash"]);

export interface McpSession {
  readonly server: Server;
  /** Resolves once no call is running (closing the server aborts the running ones first). */
  idle(): Promise<void>;
}

export function createMcpServer(options: McpServerOptions): McpSession {
  const server = new Server(
    { name: "harness", version: HARNESS_VERSION },
    {
      capabilities: { tools: {} },
      ...(options.instructions === undefined ? {} : { instructions: options.instructions }),
    },
  );
  const events = combineEvents(options.events);
  let calls = 0;
  const running = new Set<Promise<unknown>>();

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: options.tools.map(({ definition }): McpTool => {
      const tool: McpTool = {
        name: definition.name,
        description: definition.description,
        // harness's schemas are JSON Schema objects; the SDK's type narrows property values to objects.
        inputSchema: definition.inputSchema as McpTool["inputSchema"],
      };
      if (STRUCTURED_TOOLS.has(definition.name)) tool.outputSchema = EXEC_OUTPUT_SCHEMA;
      return tool;
    }),
  }));

  const callTool = async (
    request: CallToolRequest,
    extra: { signal: AbortSignal },
  ): Promise<CallToolResult> => {
    calls += 1;
    const call = { id: `mcp-${calls}`, name: request.params.name, input: request.params.arguments ?? {} };
    // One call at a time per request; the client's cancellation kills the command like Ctrl-C.
    const outcome = await runToolCalls([call], { tools: options.tools, events, signal: extra.signal });
    if (outcome.fatal !== undefined) options.onFatal?.(outcome.fatal);
    const result = outcome.results[0];
    if (result === undefined) return { content: [{ type: "text", text: "Error: no result" }], isError: true };
    const answer: CallToolResult = {
      content: [{ type: "text", text: result.content }],
      isError: result.isError,
    };
    if (result.exec !== undefined && STRUCTURED_TOOLS.has(call.name)) {
      answer.structuredContent = execStructured(result.exec);
    }
    return answer;
  };

  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    const answer = callTool(request, extra);
    running.add(answer);
    return answer.finally(() => running.delete(answer));
  });
  return {
    server,
    idle: async () => {
      while (running.size > 0) {
        await Promise.allSettled([...running]);
        // The SDK sends a handler's answer a few promise steps after it settles: let it go out first.
        await new Promise((resolve) => setImmediate(resolve));
      }
    },
  };
}
