/**
 * One task, start to end, as a function: open the sandbox, run the agent, stop the sandbox, and
 * return the result object `run --output-format json` prints. Nothing process-wide: no stdout, no
 * signal handlers, no exit code; the caller gives the model client, the signal and where lines go.
 * `harness batch` runs many of these at once; every failure (Docker, API, a bug) becomes the result.
 */

import type { AgentRunResult } from "../../agent/agent-types.js";
import { combineEvents } from "../../agent/events.js";
import { runAgent } from "../../agent/loop.js";
import type { AgentConfig, SandboxConfig } from "../../config.js";
import { writeHostFile } from "../../host-files/host-file.js";
import { HostPathError } from "../../host-files/host-path.js";
import type { ModelClient } from "../../model/model-client.js";
import { ZERO_USAGE } from "../../model/usage.js";
import { timeModelCalls } from "../../output/api-time.js";
import { EgressTally } from "../../output/egress-tally.js";
import { buildResult, type ResultMessage } from "../../output/result-summary.js";
import type { Sandbox } from "../../sandbox/sandbox.js";
import { outputsDirOf } from "../../state/run-layout.js";
import { OutputStore } from "../../tools/output-store.js";
import { createTranscript } from "../../transcript/transcript.js";
import { exitCodeFor } from "../exit-codes.js";
import { exitCodeForError } from "../report-error.js";
import { causeName, type SessionEnd } from "../session/session-end.js";
import type { ModelSetup } from "../setup/model-setup.js";
import { agentLimits, modelDeps, runStartEgress, runTools, systemPromptFor } from "../setup/run-setup.js";

/** Everything one task needs; the caller decides every path and owns every shared object. */
export interface TaskRunInput {
  /** What the agent should do. */
  task: string;
  /** Model, limits, prices (from `loadAgentConfig`). */
  agentConfig: AgentConfig;
  /** The sandbox's settings (from `loadSandboxConfig`). */
  sandboxConfig: SandboxConfig;
  /** The model client (a batch's is wrapped in the shared backoff); timed here for `duration_api_ms`. */
  model: ModelClient;
  /** What the task does with its model: tools, context window, thinking, effort (cli/setup/model-setup.ts). */
  setup: ModelSetup;
  /** The run's id (result `run_id`). */
  runId: string;
  /** The JSONL transcript; saved outputs go beside it. */
  transcriptPath: string;
  /** Opens the sandbox (cli/setup/sandbox-from-config.ts's `openSandbox` in production). */
  openSandbox: (config: SandboxConfig) => Promise<Sandbox>;
  /** Aborting ends the task cleanly: the running command is killed, the result says "canceled". */
  signal: AbortSignal;
  /**
   * The process's session end (session/session-end.ts): the transcript's run_end is held there, so
   * an error nobody caught still records it, a run_end says what ended the session, and a transcript
   * that cannot be written (a full disk) ends it.
   */
  session?: Pick<SessionEnd, "hold" | "cause" | "end"> | undefined;
  /** Copy mode: write the sandbox's changes as a unified diff here (never applied to the workspace). */
  diffPath?: string | undefined;
  /** Lines for people (sandbox progress, a container that could not be removed). */
  progress?: ((line: string) => void) | undefined;
  /** Milliseconds clock, for tests. */
  now?: (() => number) | undefined;
}

/** The result, and how long the sandbox took to open. */
export interface TaskRunOutcome {
  /** The same object `run --output-format json` prints. */
  result: ResultMessage;
  /** Time to open the sandbox, in ms; undefined when it failed to open. */
  sandboxStartMs: number | undefined;
}

/** Runs one task. Contract: never rejects; any failure is the result (status "error"). */
export async function runTask(input: TaskRunInput): Promise<TaskRunOutcome> {
  const now = input.now ?? (() => performance.now());
  const startedAt = now();
  const { agentConfig, sandboxConfig } = input;
  const timed = timeModelCalls(input.model, now);
  const facts = {
    model: agentConfig.model,
    runId: input.runId,
    pricing: agentConfig.pricing,
    maxBudgetUsd: agentConfig.maxBudgetUsd,
  };
  const failed = (error: unknown, transcriptPath: string | null): ResultMessage =>
    buildResult(facts, {
      status: input.signal.aborted ? "canceled" : "error",
      exitCode: exitCodeForError(error),
      turns: 0,
      usage: { ...ZERO_USAGE },
      finalText: "",
      error,
      durationMs: now() - startedAt,
      apiDurationMs: timed.elapsedMs(),
      transcriptPath,
    });
  let sandbox: Sandbox;
  try {
    sandbox = await input.openSandbox(sandboxConfig);
  } catch (error) {
    return { result: failed(error, null), sandboxStartMs: undefined };
  }
  const sandboxStartMs = now() - startedAt;
  let result: ResultMessage;
  // The transcript and the outputs directory, closed once the sandbox is stopped (egress records
  // of connections that end with it still go to the transcript).
  const opened: { close(): void }[] = [];
  try {
    const run = await runInSandbox(input, sandbox, timed.client, opened);
    result = buildResult(facts, {
      status: run.result.status,
      exitCode: exitCodeFor(run.result.status),
      turns: run.result.turns,
      usage: run.result.usage,
      finalText: run.result.finalText,
      error: run.result.error,
      durationMs: 0,
      apiDurationMs: timed.elapsedMs(),
      transcriptPath: input.transcriptPath,
      egress: run.tally?.counts(),
    });
    if (sandbox.copy && input.diffPath !== undefined && !input.signal.aborted) {
      await saveCopyDiff(sandbox, input.diffPath, input.progress);
    }
  } catch (error) {
    result = failed(error, input.transcriptPath);
  } finally {
    await sandbox.stop().catch((error: unknown) => {
      input.progress?.(`the sandbox could not be stopped: ${(error as Error).message}`);
    });
    for (const file of opened) file.close();
  }
  // Sandbox start and stop included, as `run`'s duration_ms includes them.
  result.duration_ms = Math.round(now() - startedAt);
  return { result, sandboxStartMs };
}

async function runInSandbox(
  input: TaskRunInput,
  sandbox: Sandbox,
  model: ModelClient,
  opened: { close(): void }[],
): Promise<{ result: AgentRunResult; tally: EgressTally | undefined }> {
  const { agentConfig, sandboxConfig } = input;
  const { description, egress } = sandbox;
  const transcript = createTranscript(input.transcriptPath, {
    runStart: {
      commandTimeoutMs: sandboxConfig.timeoutMs,
      workspace: description.workspace,
      pid: process.pid,
      context: input.setup.context,
      ...(sandboxConfig.egress === undefined ? {} : { egress: runStartEgress(sandboxConfig.egress) }),
    },
    onRefused: (error) => input.progress?.(error.message),
    // A full disk ends the batch as `run` ends (run-command.ts): one line naming the file, exit 1;
    // the tasks not recorded in the results file run again the next time.
    onWriteFailed: (error) =>
      input.session?.end({ kind: "write", path: input.transcriptPath, code: error.code }),
    endedBy: () => (input.session?.cause === undefined ? undefined : causeName(input.session.cause)),
  });
  const session = input.session;
  const held = session?.hold("a task's run_end", () =>
    transcript.endUnfinished("error", session.cause?.kind === "crash" ? session.cause.error : undefined),
  );
  opened.push({
    close: () => {
      held?.release();
      transcript.close();
    },
  });
  const outputStore = new OutputStore({
    dir: outputsDirOf(transcript.path),
    onRefused: (error) => input.progress?.(error.message),
  });
  opened.push(outputStore);
  const tally = egress === undefined ? undefined : new EgressTally();
  const events = combineEvents(transcript, tally ? { onEgress: (record) => tally.add(record) } : {});
  egress?.subscribe((record) => events.onEgress(record));
  const { setup } = input;
  const result = await runAgent(input.task, {
    model,
    tools: runTools(sandbox, agentConfig, sandboxConfig, outputStore, setup.anthropicTools),
    system: systemPromptFor(sandbox, sandboxConfig, setup.anthropicTools),
    limits: agentLimits(agentConfig),
    signal: input.signal,
    events,
    ...modelDeps(setup, outputStore),
  });
  return { result, tally };
}

/** Copy mode: the changes the sandbox made, as a patch beside the transcript; the workspace stays. */
async function saveCopyDiff(
  sandbox: Sandbox,
  path: string,
  progress: ((line: string) => void) | undefined,
): Promise<void> {
  try {
    const changes = await sandbox.copy?.exportChanges();
    if (changes === undefined || changes.changes.length === 0) return;
    writeHostFile(path, `${changes.summary}\n${changes.diff}\n`);
  } catch (error) {
    if (error instanceof HostPathError) progress?.(error.message);
    else progress?.(`copy mode: the sandbox's changes could not be read back: ${(error as Error).message}`);
  }
}
