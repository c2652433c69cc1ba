/**
 * `harness run --workspace DIR "task"`, and the prompt loop when no task is given; with `--continue` or
 * `--resume ID`, the same on top of a past run's conversation, appended to its transcript.
 */

import { createInterface } from "node:readline";
import { combineEvents } from "../../agent/events.js";
import { type AgentRunResult, runAgent } from "../../agent/loop.js";
import { type CliFlags, loadAgentConfig, loadSandboxConfig } from "../../config.js";
import { ConfigError } from "../../errors.js";
import { type HostPathError, markWorkspaceWritable } from "../../host-files/host-path.js";
import type { MessageParam } from "../../model/model-client.js";
import { createRunOutput } from "../../output/run-output.js";
import { pruneAfterRun } from "../../runs/retention.js";
import { keepRunActive } from "../../runs/run-heartbeat.js";
import { markRunLive } from "../../runs/run-liveness.js";
import { newRunId, outputsDirOf, runsDir, transcriptPathOf } from "../../state/run-layout.js";
import { sanitizeForTerminal } from "../../terminal/sanitize.js";
import { OutputStore } from "../../tools/output-store.js";
import { createTranscript } from "../../transcript/transcript.js";
import { EXIT, exitCodeFor } from "../exit-codes.js";
import { exitCodeForError } from "../report-error.js";
import { type ContinuedRun, type ContinueFlags, loadContinuedRun } from "../runs/continued-run.js";
import { type ForkedRun, prepareFork } from "../runs/fork-run.js";
import type { Interrupts } from "../session/interrupts.js";
import { causeName } from "../session/session-end.js";
import { processReviewIo, reviewCopyChanges } from "../setup/copy-changes.js";
import { lookupModelFor, modelSetup } from "../setup/model-setup.js";
import { openRunCheckpoints } from "../setup/run-checkpoints.js";
import { agentLimits, modelDeps, runStartEgress, runTools, systemPromptFor } from "../setup/run-setup.js";
import { openSandbox, postCreateRun } from "../setup/sandbox-from-config.js";

/**
 * Transcripts live outside the workspace by default: the sandbox can write anything in the
 * workspace, including a symlink where harness would write its transcript.
 */
function defaultTranscriptPath(runId: string): string {
  return transcriptPathOf(runsDir(), runId);
}

export async function runCommand(
  task: string,
  flags: ContinueFlags,
  interrupts: Interrupts,
): Promise<number> {
  // Both configs and the run to continue are checked before Docker is touched: one line, at once.
  const agentConfig = loadAgentConfig(process.env, flags);
  const thinkingOff = agentConfig.thinking?.type === "disabled";
  const continued = await loadContinuedRun(flags, { env: process.env, thinkingOff });
  // A fork's workspace is written here, before the sandbox config checks that it exists.
  const fork = await prepareFork(flags, process.env, thinkingOff);
  // A continued run works where the recorded one did; the sandbox opens with this run's flags.
  const sandboxFlags: CliFlags =
    continued === undefined ? flags : { ...flags, workspace: continued.workspace };
  const sandboxConfig = loadSandboxConfig(process.env, sandboxFlags);
  // Before anything is written (a `--transcript` inside it): no link in it is followed from now on.
  markWorkspaceWritable(sandboxConfig.workspace);
  const { outputFormat: format, pricing } = agentConfig;
  if (format !== "text" && task.trim() === "") {
    throw new ConfigError(`--output-format ${format} needs a task: the interactive prompt is text only`);
  }
  const runId = continued?.id ?? newRunId();
  const transcriptPath = continued?.transcriptPath ?? flags.transcript ?? defaultTranscriptPath(runId);
  // From now until this process ends, other harness processes see the continued run as running.
  using _active = continued === undefined ? undefined : keepRunActive(continued.transcriptPath);
  // Until this process ends the run: killed before, `harness runs` lists it as interrupted.
  using live = markRunLive(runsDir(), runId);
  if (continued !== undefined) reportContinuing(continued);
  if (fork !== undefined) reportFork(fork, sandboxConfig.workspace);
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
  const { AnthropicModelClient } = await import("../../model/anthropic-model-client.js");
  const client = new AnthropicModelClient({
    apiKey: agentConfig.apiKey,
    model: agentConfig.model,
    ...(agentConfig.baseURL ? { baseURL: agentConfig.baseURL } : {}),
  });
  const model = output.timeModelCalls(client);
  // The model is asked about while the sandbox opens; a setting it cannot take is refused first.
  const lookup = lookupModelFor(agentConfig, process.env, () => client.describeModel());
  const checkFirst =
    agentConfig.thinking !== undefined ||
    agentConfig.effort !== undefined ||
    agentConfig.contextManagement === "server";
  const setupOf = async () => {
    try {
      return modelSetup(agentConfig, await lookup);
    } catch (error) {
      return output.fail(error, exitCodeForError(error));
    }
  };
  const early = checkFirst ? await setupOf() : undefined;
  const { session } = interrupts;
  // Copy mode: the copy is kept under the run's id until its changes land or are dropped.
  const keepCopyAs = { id: runId, command: "run" };
  await using sandbox = await openSandbox(sandboxConfig, { session, keepCopyAs }).catch((error: unknown) =>
    output.fail(error, exitCodeForError(error)),
  );
  const setup = early ?? (await setupOf());
  if (setup.lookup.notice !== undefined)
    process.stderr.write(`harness: ${sanitizeForTerminal(setup.lookup.notice, { oneLine: true })}\n`);
  const { description, egress } = sandbox;
  const system = systemPromptFor(sandbox, sandboxConfig, setup.anthropicTools);
  const transcript = createTranscript(transcriptPath, {
    runStart: {
      commandTimeoutMs: sandboxConfig.timeoutMs,
      workspace: description.workspace,
      pid: process.pid,
      context: setup.context,
      ...(fork === undefined ? {} : { forkOf: { run: fork.run.id, step: fork.step } }),
      // As configured (presets resolved), so a replay gets the same allowlist without asking npm again.
      ...(sandboxConfig.egress === undefined ? {} : { egress: runStartEgress(sandboxConfig.egress) }),
    },
    onRefused: reportRefusal,
    // A full disk: the run ends (the running command stopped, the sandbox's end run), exit code 1.
    onWriteFailed: (error) => session.end({ kind: "write", path: transcriptPath, code: error.code }),
    postCreate: postCreateRun(sandbox),
    endedBy: () => (session.cause === undefined ? undefined : causeName(session.cause)),
  });
  // An error nobody caught cuts the loop short: its run_end is still written (session-end.ts).
  session.hold("the transcript's run_end", () =>
    transcript.endUnfinished("error", session.cause?.kind === "crash" ? session.cause.error : undefined),
  );
  // Whole outputs of cut commands live beside the transcript, outside the workspace.
  // A continued run shares the directory: earlier ids stay readable and new ones never reuse them.
  const outputStore = new OutputStore({
    dir: outputsDirOf(transcript.path),
    ...(continued === undefined ? {} : { adoptExisting: true, usedIds: continued.highestOutputId }),
    onRefused: reportRefusal,
  });
  const tools = runTools(sandbox, agentConfig, sandboxConfig, outputStore, setup.anthropicTools);
  const renderer = output.listener({ description, timeoutMs: sandboxConfig.timeoutMs, egress });
  const events = combineEvents(renderer, transcript);
  // For the sandbox's whole life, not per run: connections end (and are recorded) when they end,
  // between runs or while the sandbox stops too. Nothing to undo: the monitor goes with the sandbox.
  egress?.subscribe((record) => events.onEgress(record));
  const history = continued?.messages ?? fork?.messages ?? [];
  const checkpoints = await openRunCheckpoints({
    sandbox,
    transcript,
    enabled: flags.checkpoints !== false,
    keepIgnored: flags.checkpoints === "all",
    history,
    env: process.env,
    onNotice: (text) => events.onNotice(text),
    progress: (line) => process.stderr.write(`harness: ${sanitizeForTerminal(line, { oneLine: true })}\n`),
  });
  const { end: closeCheckpoints } = session.hold("closing the checkpoints", async () => {
    await checkpoints?.close();
  });
  sandbox.published?.subscribe((record) => transcript.onPublish(record));
  const runTurn = async (text: string, history: MessageParam[]): Promise<AgentRunResult> => {
    const signal = interrupts.begin();
    try {
      return await runAgent(text, {
        model,
        tools,
        system,
        limits: agentLimits(agentConfig),
        signal,
        events,
        history,
        ...(checkpoints === undefined ? {} : { checkpoints }),
        ...modelDeps(setup, outputStore),
      });
    } finally {
      interrupts.end();
    }
  };

  // A closed pipe on stdout (`| head`), SIGTERM, SIGHUP: the session's end (session/) aborts the turn
  // and ends the prompt; the run's end below runs as for any other end.
  let code: number = EXIT.ok;
  if (task.trim() !== "") {
    code = exitCodeFor((await runTurn(task, history)).status);
  } else {
    code = await promptLoop(runTurn, interrupts, history);
  }
  await closeCheckpoints();
  // A transcript cut short by a full disk has no run_end: the run is listed as interrupted.
  if (session.cause?.kind === "write") live.keep();
  if (!session.stderrGone)
    process.stderr.write(`harness: transcript: ${sanitizeForTerminal(transcript.path, { oneLine: true })}\n`);
  // Retention: never throws; a failure is one warning line and the run's exit code stands.
  pruneAfterRun({ transcriptPath: transcript.path });
  // Copy mode: the run's changes are shown, and applied only when asked, before the sandbox goes.
  await reviewCopyChanges(sandbox, flags.apply, processReviewIo(session.signal));
  // What ended the session, if anything did, sets the exit code instead (cli.ts).
  return code;
}

/** A host file harness would not write (a link the sandbox planted, a file swapped in): one line. */
function reportRefusal(error: HostPathError): void {
  process.stderr.write(`harness: ${error.message}\n`);
}

/** One stderr line naming the run forked from and what was restored, then one per path left out. */
function reportFork(fork: ForkedRun, workspace: string): void {
  const { files, directories, symlinks } = fork.restored;
  const line = `forked from run ${fork.run.id} at step ${fork.step} (${fork.messages.length} messages); restored ${files} file(s), ${directories} directorie(s), ${symlinks} symlink(s) into ${workspace}`;
  for (const text of [line, ...fork.notes])
    process.stderr.write(`harness: ${sanitizeForTerminal(text, { oneLine: true })}\n`);
}

/** One stderr line naming the run that goes on (stdout stays the run's output in every format). */
function reportContinuing(run: ContinuedRun): void {
  const cut =
    run.incompleteCalls === 0
      ? ""
      : `; it was cut off mid-turn: ${run.incompleteCalls} tool call(s) without a result are answered as not completed`;
  const id = sanitizeForTerminal(run.id, { oneLine: true });
  const workspace = sanitizeForTerminal(run.workspace, { oneLine: true });
  process.stderr.write(
    `harness: continuing run ${id} in workspace ${workspace} (${run.messages.length} messages)${cut}\n`,
  );
  for (const note of run.notes)
    process.stderr.write(`harness: ${sanitizeForTerminal(note, { oneLine: true })}\n`);
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
  initialHistory: MessageParam[],
): Promise<number> {
  const tty = process.stdin.isTTY === true;
  const rl = createInterface({
    input: process.stdin,
    terminal: tty,
    ...(tty ? { output: process.stdout } : {}),
  });
  rl.on("SIGINT", () => interrupts.press());
  // The session's end (SIGHUP, SIGTERM, output gone, Ctrl-C at the prompt) closes the prompt; so does
  // a stdin that fails (a terminal that is gone).
  const close = () => rl.close();
  interrupts.session.signal.addEventListener("abort", close, { once: true });
  process.stdin.once("error", close);
  rl.setPrompt("harness> ");
  let history = initialHistory;
  let code: number = EXIT.ok;
  // Ctrl-D ends the input with the cursor after the prompt: what harness says next starts a line.
  let endOfInput = true;
  try {
    rl.prompt();
    for await (const line of rl) {
      const text = line.trim();
      endOfInput = false;
      if (!text || text === "exit" || text === "q") break;
      const result = await runTurn(text, history);
      history = result.messages;
      code = exitCodeFor(result.status);
      if (result.status === "error" || interrupts.ending) break;
      endOfInput = true;
      rl.prompt();
    }
  } finally {
    interrupts.session.signal.removeEventListener("abort", close);
    process.stdin.off("error", close);
    rl.close();
  }
  if (tty && endOfInput) process.stdout.write("\n");
  return code;
}
