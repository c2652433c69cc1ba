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
import { processReviewIo, reviewCopyChanges } from "./copy-changes.js";
import { EXIT } from "./exit-codes.js";
import { runStartEgress, systemPromptFor } from "./run-setup.js";
import { openSandbox, postCreateRun } from "./sandbox-from-config.js";
import type { Interrupts } from "./session/interrupts.js";
import { causeName } from "./session/session-end.js";

export interface McpFlags extends CliFlags {
  /** `--no-apply` / `--apply` (copy mode). */
  apply?: boolean;
}

/** What the transcript's run_start says the "task" was: the session, not a prompt. */
const SESSION_TASK = "(MCP session: tool calls from an MCP client)";

/**
 * Every way the session ends takes one path (session/session-end.ts): the client closing stdin (the
 * spec's way: the calls it sent are answered first), SIGTERM (the spec's next step), SIGHUP, Ctrl-C,
 * the client going away so that an answer cannot be written (EPIPE), an error nobody caught. Each
 * ends with run_end in the transcript and the sandbox stopped: what the calls left running ended, the
 * git files they planted moved aside.
 */
export async function mcpCommand(flags: McpFlags, interrupts: Interrupts): Promise<number> {
  const { session } = interrupts;
  const config = loadSandboxConfig(process.env, flags);
  const transcriptPath = flags.transcript ?? transcriptPathOf(runsDir(), newRunId());
  await using sandbox = await openSandbox(config, { session });
  const system = systemPromptFor(sandbox, config);
  const transcript = createTranscript(transcriptPath, {
    runStart: {
      commandTimeoutMs: config.timeoutMs,
      workspace: sandbox.description.workspace,
      pid: process.pid,
      ...(config.egress === undefined ? {} : { egress: runStartEgress(config.egress) }),
    },
    postCreate: postCreateRun(sandbox),
    endedBy: () => (session.cause === undefined ? undefined : causeName(session.cause)),
  });
  // Held from before run_start, for the life of the command: an error nobody caught still records
  // the session's end.
  session.hold("the transcript's run_end", () =>
    transcript.endUnfinished("error", session.cause?.kind === "crash" ? session.cause.error : undefined),
  );
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
  const say = (line: string) => {
    if (!session.stderrGone)
      process.stderr.write(`harness: ${sanitizeForTerminal(line, { oneLine: true })}\n`);
  };
  say(`MCP server ready on stdio; transcript: ${transcript.path}`);

  let calls = 0;
  const server = createMcpServer({
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
  // No unit of work of harness's own to cancel: the client cancels its calls. A Ctrl-C, like every
  // other way, ends the session.
  await serveOverStdio(server, session.signal);
  const cause = session.cause;
  // The client's own ways to end a session (closing stdin, then SIGTERM) end it as asked.
  const asked = cause === undefined || (cause.kind === "signal" && cause.signal === "SIGTERM");
  const by = cause === undefined ? "" : ` (ended by ${causeName(cause)})`;
  transcript.onRunEnd({
    status: asked ? "submitted" : "canceled",
    messages: [],
    turns: 0,
    usage: { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
    finalText: `MCP session ended after ${calls} tool call(s)${by}.`,
  });
  say(`MCP session ended${by}; transcript: ${transcript.path}`);
  pruneAfterRun({ transcriptPath: transcript.path });
  await reviewCopyChanges(sandbox, flags.apply, processReviewIo(session.signal));
  return EXIT.ok;
}
