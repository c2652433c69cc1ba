/**
 * `harness mcp --workspace DIR`: the sandbox's tools as an MCP server on stdin/stdout, for an agent the
 * user already works with (Claude Code, an editor). The same sandbox, limits, allowlist, blocklist and
 * transcript as `harness run`; only the model is someone else's. stdout carries the protocol alone:
 * everything else (build progress, the transcript's path) goes to stderr.
 */
import { type CliFlags, loadSandboxConfig } from "../../config.js";
import { McpRun } from "../../mcp/mcp-run.js";
import { createMcpServer } from "../../mcp/mcp-server.js";
import { serveOverStdio } from "../../mcp/serve-stdio.js";
import { pruneAfterRun } from "../../runs/retention.js";
import { type LiveMark, markRunLive } from "../../runs/run-liveness.js";
import { newRunId, outputsDirOf, runsDir, transcriptPathOf } from "../../state/run-layout.js";
import { sanitizeForTerminal } from "../../terminal/sanitize.js";
import { createBackgroundTool } from "../../tools/background-tool.js";
import { createBashTool } from "../../tools/bash-tool.js";
import { createBlocklist } from "../../tools/blocklist.js";
import { OutputStore } from "../../tools/output-store.js";
import { createReadFileTool } from "../../tools/read-file-tool.js";
import { createReadOutputTool } from "../../tools/read-output-tool.js";
import type { Tool } from "../../tools/tool.js";
import { createWriteFileTool } from "../../tools/write-file-tool.js";
import { createTranscript } from "../../transcript/transcript.js";
import { MCP_SESSION_TASK } from "../../transcript/transcript-records.js";
import { EXIT } from "../exit-codes.js";
import type { Interrupts } from "../session/interrupts.js";
import { causeName } from "../session/session-end.js";
import { processReviewIo, reviewCopyChanges } from "../setup/copy-changes.js";
import { openRunCheckpoints } from "../setup/run-checkpoints.js";
import { runStartEgress, systemPromptFor } from "../setup/run-setup.js";
import { newCopyId, openSandbox, postCreateRun } from "../setup/sandbox-from-config.js";

export interface McpFlags extends CliFlags {
  /** `--no-apply` / `--apply` (copy mode). */
  apply?: boolean;
  /** `--no-checkpoints` gives false, `--checkpoints all` "all". */
  checkpoints?: boolean | "all";
  /** `--structured-content`: bash answers with structured content too (mcp-server.ts). */
  structuredContent?: boolean;
}

/**
 * Every way the session ends takes one path (session/session-end.ts): the client closing stdin (the
 * spec's way: the calls it sent are answered first), SIGTERM (the spec's next step), SIGHUP, Ctrl-C,
 * the client going away so that an answer cannot be written (EPIPE), an error nobody caught. Each
 * ends with the sandbox stopped (what the calls left running ended, the git files they planted moved
 * aside) and, when a tool was called, the last checkpoint taken and run_end in the transcript.
 */
export async function mcpCommand(flags: McpFlags, interrupts: Interrupts): Promise<number> {
  const { session } = interrupts;
  const config = loadSandboxConfig(process.env, flags);
  const runId = newRunId();
  const transcriptPath = flags.transcript ?? transcriptPathOf(runsDir(), runId);
  // From the first tool call on, `harness runs` can tell a killed session (`interrupted`) from a live
  // one; a transcript elsewhere (--transcript) is not in that listing.
  let live: LiveMark | undefined;
  using _live = { [Symbol.dispose]: () => live?.[Symbol.dispose]() };
  const markLive = () => {
    if (flags.transcript === undefined) live ??= markRunLive(runsDir(), runId);
  };
  await using sandbox = await openSandbox(config, {
    session,
    keepCopyAs: { id: newCopyId("mcp"), command: "mcp" },
  });
  const system = systemPromptFor(sandbox, config);
  const transcript = createTranscript(transcriptPath, {
    runStart: {
      commandTimeoutMs: config.timeoutMs,
      workspace: sandbox.description.workspace,
      pid: process.pid,
      mcpSession: true,
      ...(config.egress === undefined ? {} : { egress: runStartEgress(config.egress) }),
    },
    // A full disk ends the session (run-command.ts does the same).
    onWriteFailed: (error) => session.end({ kind: "write", path: transcriptPath, code: error.code }),
    postCreate: postCreateRun(sandbox),
    endedBy: () => (session.cause === undefined ? undefined : causeName(session.cause)),
  });
  // Held from before run_start, for the life of the command: an error nobody caught still records
  // the session's end.
  session.hold("the transcript's run_end", () =>
    transcript.endUnfinished("error", session.cause?.kind === "crash" ? session.cause.error : undefined),
  );
  // A session on the same --transcript as an earlier one: its saved outputs stay readable, new ids follow.
  const outputStore = new OutputStore({ dir: outputsDirOf(transcript.path), adoptExisting: true });
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
  const say = (line: string) => {
    if (!session.stderrGone)
      process.stderr.write(`harness: ${sanitizeForTerminal(line, { oneLine: true })}\n`);
  };
  // The session is a run from its first tool call on (mcp-run.ts): a health check leaves none.
  const run = new McpRun({
    transcript,
    start: {
      task: MCP_SESSION_TASK,
      system,
      tools: tools.map((tool) => tool.definition.name),
      limits: { maxTurns: 0, maxTokens: 0 },
    },
    openCheckpoints: () =>
      openRunCheckpoints({
        sandbox,
        transcript,
        enabled: flags.checkpoints !== false,
        keepIgnored: flags.checkpoints === "all",
        history: [],
        env: process.env,
        onNotice: (text) => {
          transcript.onNotice(text);
          say(text);
        },
        progress: say,
      }),
  });
  const { end: closeCheckpoints } = session.hold("closing the checkpoints", () => run.closeCheckpoints());
  sandbox.egress?.subscribe((record) => run.onEgress(record));
  sandbox.published?.subscribe((record) => run.onPublish(record));
  say(`MCP server ready on stdio; transcript, from the first tool call on: ${transcript.path}`);

  const server = createMcpServer({
    tools,
    events: run.events,
    instructions: system,
    onFatal: (error) => say(`the sandbox failed: ${error.message}`),
    structuredContent: flags.structuredContent === true,
    beforeCall: () => {
      markLive();
      return run.begin();
    },
  });
  // No unit of work of harness's own to cancel: the client cancels its calls. A Ctrl-C, like every
  // other way, ends the session.
  await serveOverStdio(server, session.signal);
  await closeCheckpoints();
  const cause = session.cause;
  // The client's own ways to end a session (closing stdin, then SIGTERM) end it as asked.
  const asked = cause === undefined || (cause.kind === "signal" && cause.signal === "SIGTERM");
  const by = cause === undefined ? "" : ` (ended by ${causeName(cause)})`;
  run.end(asked ? "submitted" : "canceled", `MCP session ended after ${run.calls} tool call(s)${by}.`);
  // A transcript that could not be written has no run_end: the session stays listed as interrupted.
  if (cause?.kind === "write") live?.keep();
  if (run.started) {
    say(`MCP session ended${by}; transcript: ${transcript.path}`);
    pruneAfterRun({ transcriptPath: transcript.path });
  } else say(`MCP session ended${by}; no tool was called, so it left no run`);
  await reviewCopyChanges(sandbox, flags.apply, processReviewIo(session.signal));
  return EXIT.ok;
}
