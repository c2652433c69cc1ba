/**
 * `harness mcp --workspace DIR`: the sandbox's tools as an MCP server on stdin/stdout, for an agent the
 * user already works with (Claude Code, an editor). The same sandbox, limits, allowlist, blocklist and
 * transcript as `harness run`; only the model is someone else's. stdout carries the protocol alone:
 * everything else (build progress, the transcript's path) goes to stderr.
 */
import { type CliFlags, loadSandboxConfig } from "../config.js";
import { createMcpServer } from "../mcp/mcp-server.js";
import { serveOverStdio } from "../mcp/serve-stdio.js";
import { pruneAfterRun } from "../runs/retention.js";
import { newRunId, outputsDirOf, runsDir, transcriptPathOf } from "../state/run-layout.js";
import { sanitizeForTerminal } from "../terminal/sanitize.js";
import { createBackgroundTool } from "../tools/background-tool.js";
import { createBashTool } from "../tools/bash-tool.js";
import { createBlocklist } from "../tools/blocklist.js";
import { OutputStore } from "../tools/output-store.js";
import { createReadFileTool } from "../tools/read-file-tool.js";
import { createReadOutputTool } from "../tools/read-output-tool.js";
import type { Tool } from "../tools/tool.js";
import { createWriteFileTool } from "../tools/write-file-tool.js";
import { createTranscript } from "../transcript/transcript.js";
import { reviewCopyChanges } from "./copy-changes.js";
import { EXIT } from "./exit-codes.js";
import { runStartEgress, systemPromptFor } from "./run-setup.js";
import { openSandbox, postCreateRun } from "./sandbox-from-config.js";

export interface McpFlags extends CliFlags {
  /** `--no-apply` / `--apply` (copy mode). */
  apply?: boolean;
}

/** What the transcript's run_start says the "task" was: the session, not a prompt. */
const SESSION_TASK = "(MCP session: tool calls from an MCP client)";

/**
 * `interrupt`: aborted by Ctrl-C (a second one quits at once). SIGTERM, how MCP clients end a server
 * that did not exit after its stdin closed, stops the session the same way.
 */
export async function mcpCommand(flags: McpFlags, interrupt: AbortSignal): Promise<number> {
  const config = loadSandboxConfig(process.env, flags);
  const transcriptPath = flags.transcript ?? transcriptPathOf(runsDir(), newRunId());
  await using sandbox = await openSandbox(config);
  const system = systemPromptFor(sandbox, config);
  const transcript = createTranscript(transcriptPath, {
    runStart: {
      commandTimeoutMs: config.timeoutMs,
      workspace: sandbox.description.workspace,
      pid: process.pid,
      ...(config.egress === undefined ? {} : { egress: runStartEgress(config.egress) }),
    },
    postCreate: postCreateRun(sandbox),
  });
  const outputStore = new OutputStore({ dir: outputsDirOf(transcript.path) });
  const timeoutMs = config.timeoutMs;
  const blocklist = createBlocklist({
    disabled: flags.blocklist === false,
    extraPatterns: flags.block ?? [],
  });
  const tools: Tool[] = [
    createBashTool(sandbox, { timeoutMs, blocklist, outputStore }),
    createReadOutputTool(outputStore),
    createReadFileTool(sandbox, { timeoutMs, outputStore }),
    createWriteFileTool(sandbox, { timeoutMs }),
    createBackgroundTool(sandbox, { timeoutMs }),
  ];
  transcript.onRunStart({
    task: SESSION_TASK,
    system,
    tools: tools.map((tool) => tool.definition.name),
    limits: { maxTurns: 0, maxTokens: 0 },
  });
  sandbox.egress?.subscribe((record) => transcript.onEgress(record));
  sandbox.published?.subscribe((record) => transcript.onPublish(record));
  const say = (line: string) =>
    process.stderr.write(`harness: ${sanitizeForTerminal(line, { oneLine: true })}\n`);
  say(`MCP server ready on stdio; transcript: ${transcript.path}`);

  const terminated = new AbortController();
  // Kept for the whole command: a SIGTERM while the sandbox stops must not cut that short.
  process.on("SIGTERM", () => terminated.abort());
  let calls = 0;
  const session = createMcpServer({
    tools,
    events: {
      ...transcript,
      onToolCall: (call) => {
        calls += 1;
        transcript.onToolCall(call);
      },
    },
    instructions: system,
    onFatal: (error) => say(`the sandbox failed: ${error.message}`),
  });
  await serveOverStdio(session, AbortSignal.any([interrupt, terminated.signal]));
  transcript.onRunEnd({
    status: "submitted",
    messages: [],
    turns: 0,
    usage: { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
    finalText: `MCP session ended after ${calls} tool call(s).`,
  });
  say(`MCP session ended; transcript: ${transcript.path}`);
  pruneAfterRun({ transcriptPath: transcript.path });
  await reviewCopyChanges(sandbox, flags.apply);
  return EXIT.ok;
}
