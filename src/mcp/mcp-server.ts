/**
 * harness's tools as a Model Context Protocol server: each `tools/call` runs one tool on the sandbox
 * exactly as `harness run` would for the model (same tools, same blocklist, same transcript records,
 * the same text), so whatever agent drives harness over MCP gets the same boundary and reads the same
 * results.
 *
 * Requests are answered concurrently (the SDK dispatches each as it arrives: a `tools/list` or a
 * `ping` is answered while a command runs), but tool calls run one at a time, in the order they came:
 * the sandbox runs one command at a time (its executor takes calls in turn), the shell's working
 * directory carries from one call to the next, and each call's checkpoint is the workspace as that
 * call left it. A call cancelled while it waits for its turn never runs.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  type CallToolRequest,
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
  type Tool as McpTool,
} from "@modelcontextprotocol/sdk/types.js";
import type { StepCheckpoints } from "../agent/agent-types.js";
import type { AgentEvents } from "../agent/events.js";
import { combineEvents } from "../agent/events.js";
import { runToolCalls } from "../agent/tool-turn.js";
import type { Tool, ToolCall } from "../tools/tool.js";
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
  /**
   * Answer bash with structured content too, declared by an `outputSchema` (`--structured-content`).
   * Off by default: hosts such as Claude Code show a result's structured content, as JSON, instead
   * of its text, to the person and to the model alike.
   */
  structuredContent?: boolean;
  /**
   * Called as each tool call's turn comes, before it runs: the first begins the session's run
   * (mcp-run.ts), and the checkpoints it gives back take one after each call. Contract: never rejects.
   */
  beforeCall?: () => Promise<StepCheckpoints | undefined>;
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
  const structured = options.structuredContent === true;
  let calls = 0;
  /** The last call's answer: the next call runs once it has settled. */
  let turn: Promise<unknown> = Promise.resolve();
  const running = new Set<Promise<unknown>>();

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: options.tools.map(({ definition }): McpTool => {
      const tool: McpTool = {
        name: definition.name,
        description: definition.description,
        // harness's schemas are JSON Schema objects; the SDK's type narrows property values to objects.
        inputSchema: definition.inputSchema as McpTool["inputSchema"],
      };
      if (structured && STRUCTURED_TOOLS.has(definition.name)) tool.outputSchema = EXEC_OUTPUT_SCHEMA;
      return tool;
    }),
  }));

  /** Runs one call in its turn. Never rejects: what a tool throws is in its result. */
  const runCall = async (call: ToolCall, signal: AbortSignal): Promise<CallToolResult> => {
    const checkpoints = await options.beforeCall?.();
    // The client's cancellation kills the command like Ctrl-C; a call cancelled before its turn is
    // answered "not run" without running (and recorded so).
    const outcome = await runToolCalls([call], { tools: options.tools, events, signal, checkpoints });
    if (outcome.fatal !== undefined) options.onFatal?.(outcome.fatal);
    const result = outcome.results[0];
    if (result === undefined) return { content: [{ type: "text", text: "Error: no result" }], isError: true };
    // The text first, as `harness run` gives it to the model: what every host shows.
    const answer: CallToolResult = {
      content: [{ type: "text", text: result.content }],
      isError: result.isError,
    };
    if (structured && result.exec !== undefined && STRUCTURED_TOOLS.has(call.name)) {
      answer.structuredContent = execStructured(result.exec, result.outputId);
    }
    return answer;
  };

  const callTool = (request: CallToolRequest, signal: AbortSignal): Promise<CallToolResult> => {
    calls += 1;
    const call = { id: `mcp-${calls}`, name: request.params.name, input: request.params.arguments ?? {} };
    const answer = turn.then(() => runCall(call, signal));
    turn = answer.catch(() => undefined);
    return answer;
  };

  server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
    const answer = callTool(request, extra.signal);
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
