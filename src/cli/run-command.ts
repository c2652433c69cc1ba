/** `harness run --workspace DIR "task"`, and the prompt loop when no task is given. */
import { homedir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { combineEvents } from "../agent/events.js";
import { type AgentRunResult, runAgent } from "../agent/loop.js";
import { buildSystemPrompt } from "../agent/system-prompt.js";
import { type CliFlags, loadAgentConfig, loadSandboxConfig } from "../config.js";
import { ConfigError } from "../errors.js";
import type { MessageParam, TokenUsage } from "../model/model-client.js";
import { costUsd } from "../model/pricing.js";
import { createRunOutput } from "../output/run-output.js";
import { createBashTool } from "../tools/bash-tool.js";
import { createBlocklist } from "../tools/blocklist.js";
import { OutputStore } from "../tools/output-store.js";
import { createReadOutputTool } from "../tools/read-output-tool.js";
import { createTranscript } from "../transcript/transcript.js";
import { reviewCopyChanges } from "./copy-changes.js";
import { watchEnvFile } from "./env-file-watch.js";
import { EXIT, exitCodeFor } from "./exit-codes.js";
import type { Interrupts } from "./interrupts.js";
import { exitCodeForError } from "./report-error.js";
import { openSandbox } from "./sandbox-from-config.js";

/**
 * Transcripts live outside the workspace by default: the sandbox can write anything in the
 * workspace, including a symlink where harness would write its transcript.
 */
function defaultTranscriptPath(runId: string): string {
  const state = process.env["XDG_STATE_HOME"] || join(homedir(), ".local", "state");
  return join(state, "harness", "runs", `${runId}.jsonl`);
}

export async function runCommand(task: string, flags: CliFlags, interrupts: Interrupts): Promise<number> {
  // Both configs are checked before Docker is touched: a missing key is one line, at once.
  const agentConfig = loadAgentConfig(process.env, flags);
  const sandboxConfig = loadSandboxConfig(process.env, flags);
  const { outputFormat: format, pricing } = agentConfig;
  if (format !== "text" && task.trim() === "") {
    throw new ConfigError(`--output-format ${format} needs a task: the interactive prompt is text only`);
  }
  const runId = `${new Date().toISOString().replace(/[:.]/g, "-")}-${process.pid}`;
  const transcriptPath = flags.transcript ?? defaultTranscriptPath(runId);
  const { model: modelId, maxBudgetUsd } = agentConfig;
  const output = createRunOutput({
    format,
    model: modelId,
    runId,
    transcriptPath,
    pricing,
    maxBudgetUsd,
    exitCodeFor,
  });
  const { AnthropicModelClient } = await import("../model/anthropic-model-client.js");
  const model = output.timeModelCalls(
    new AnthropicModelClient({
      apiKey: agentConfig.apiKey,
      model: agentConfig.model,
      ...(agentConfig.baseURL ? { baseURL: agentConfig.baseURL } : {}),
    }),
  );
  const blocklist = createBlocklist(agentConfig.blocklist);
  await using sandbox = await openSandbox(sandboxConfig).catch((error: unknown) =>
    output.fail(error, exitCodeForError(error)),
  );
  const system = buildSystemPrompt({
    workdir: sandbox.workdir,
    network: sandboxConfig.network,
    timeoutSeconds: Math.round(sandboxConfig.timeoutMs / 1000),
    savedOutput: true,
    readOnlyPaths: sandbox.description.readOnlyPaths,
  });
  const transcript = createTranscript(transcriptPath, {
    runStart: { commandTimeoutMs: sandboxConfig.timeoutMs },
  });
  // Whole outputs of cut commands live beside the transcript, outside the workspace.
  const outputStore = new OutputStore({ dir: `${transcript.path.replace(/\.jsonl$/, "")}.outputs` });
  const tools = [
    createBashTool(sandbox, { timeoutMs: sandboxConfig.timeoutMs, blocklist, outputStore }),
    createReadOutputTool(outputStore),
  ];
  const { description } = sandbox;
  const envFileChanged = sandbox.copy ? () => undefined : watchEnvFile(description.workspace);
  const renderer = output.listener({ description, timeoutMs: sandboxConfig.timeoutMs });
  const runTurn = async (text: string, history: MessageParam[]): Promise<AgentRunResult> => {
    const signal = interrupts.begin();
    try {
      return await runAgent(text, {
        model,
        tools,
        system,
        limits: {
          maxTurns: agentConfig.maxTurns,
          maxTokens: agentConfig.maxTokens,
          ...(agentConfig.maxTotalTokens ? { maxTotalTokens: agentConfig.maxTotalTokens } : {}),
          ...(maxBudgetUsd && pricing
            ? { maxCostUsd: maxBudgetUsd, costOf: (usage: TokenUsage) => costUsd(pricing, usage) }
            : {}),
        },
        signal,
        events: combineEvents(renderer, transcript),
        history,
      });
    } finally {
      interrupts.end();
    }
  };

  // A closed pipe on stdout (`| head`) must end the run cleanly, not crash with the command still running.
  process.stdout.on("error", () => interrupts.outputGone());
  let code: number = EXIT.ok;
  if (task.trim() !== "") {
    code = exitCodeFor((await runTurn(task, [])).status);
  } else {
    code = await promptLoop(runTurn, interrupts);
  }
  process.stderr.write(`harness: transcript: ${transcript.path}\n`);
  const envWarning = envFileChanged();
  if (envWarning) process.stderr.write(`harness: ${envWarning}\n`);
  // Copy mode: the run's changes are shown, and applied only when asked, before the sandbox goes.
  await reviewCopyChanges(sandbox, flags.apply);
  return interrupts.isOutputGone ? EXIT.brokenPipe : code;
}

/**
 * The prompt loop: conversation kept across prompts; `exit`, `q`, an empty line or Ctrl-D leave.
 * Lines are read through the async iterator, which queues them, so piped input typed ahead of a
 * running turn is not lost. On a terminal readline takes Ctrl-C as a key, not a signal: it is routed
 * to the same interrupt handling as SIGINT.
 */
async function promptLoop(
  runTurn: (text: string, history: MessageParam[]) => Promise<AgentRunResult>,
  interrupts: Interrupts,
): Promise<number> {
  const tty = process.stdin.isTTY === true;
  const rl = createInterface({
    input: process.stdin,
    terminal: tty,
    ...(tty ? { output: process.stdout } : {}),
  });
  rl.on("SIGINT", () => interrupts.press());
  rl.setPrompt("harness> ");
  let history: MessageParam[] = [];
  let code: number = EXIT.ok;
  try {
    rl.prompt();
    for await (const line of rl) {
      const text = line.trim();
      if (!text || text === "exit" || text === "q") break;
      const result = await runTurn(text, history);
      history = result.messages;
      code = exitCodeFor(result.status);
      if (result.status === "error" || interrupts.isOutputGone) break;
      rl.prompt();
    }
  } finally {
    rl.close();
  }
  return code;
}
