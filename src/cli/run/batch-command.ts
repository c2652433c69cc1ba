/**
 * `harness batch TASKS.jsonl`: many tasks, each in its own sandbox, at most `--concurrency` at once,
 * one results line per task, a transcript per task, a summary at the end (src/batch/README.md).
 * Ctrl-C, SIGTERM or SIGHUP (any way the session ends: session/session-end.ts) stops starting tasks
 * and ends the running ones cleanly; the same command again resumes. Exit codes: BATCH_EXIT (src/batch/batch-summary.ts).
 */

import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { withSharedBackoff } from "../../batch/backoff-model-client.js";
import { type BatchProgress, createProgress } from "../../batch/batch-progress.js";
import { BatchSpend } from "../../batch/batch-spend.js";
import { formatSummary } from "../../batch/batch-summary.js";
import { defaultConcurrency } from "../../batch/default-concurrency.js";
import { type BatchResult, ResultsWriter, type RetryMode, readResults } from "../../batch/results-file.js";
import { runBatch } from "../../batch/run-batch.js";
import { SharedBackoff } from "../../batch/shared-backoff.js";
import { readTaskFile } from "../../batch/task-file.js";
import { type PlannedTask, planTasks } from "../../batch/task-plan.js";
import type { Discard } from "../../batch/warm-ahead.js";
import type { CliFlags } from "../../config.js";
import { ConfigError } from "../../errors.js";
import { HostPathError, markWorkspaceWritable } from "../../host-files/host-path.js";
import type { ModelLookup } from "../../model/model-catalog.js";
import type { ModelClient } from "../../model/model-client.js";
import type { ModelProfile } from "../../model/model-profile.js";
import { ZERO_USAGE } from "../../model/usage.js";
import { buildResult } from "../../output/result-summary.js";
import { ensureSandboxImage } from "../../sandbox/docker/container/image.js";
import { connectDocker } from "../../sandbox/docker/engine/docker-client.js";
import { warmContainer } from "../../sandbox/docker/warm/warm-container.js";
import { transcriptPathOf } from "../../state/run-layout.js";
import { sanitizeForTerminal } from "../../terminal/sanitize.js";
import { exitCodeForError } from "../report-error.js";
import type { Interrupts } from "../session/interrupts.js";
import { lookupModelFor, type ModelSetup, modelSetup } from "../setup/model-setup.js";
import { openSandbox } from "../setup/sandbox-from-config.js";
import { runTask } from "./run-task.js";

/** `harness batch`'s own flags, besides the sandbox and model flags every task inherits. */
export interface BatchFlags extends CliFlags {
  concurrency?: string;
  /** Warm pool size (default: the concurrency). */
  warm?: string;
  results?: string;
  transcripts?: string;
  retry?: string;
}

/** What the command may be given instead of the process's own (tests and the benchmark). */
export interface BatchCommandDeps {
  /** Makes a task's model client; default: the Anthropic client with its own retries off. */
  createModel?: (planned: PlannedTask) => Promise<ModelClient>;
  /** Asks the Models API about a task's model; default: the Anthropic client's `describeModel`. */
  describeModel?: (planned: PlannedTask) => Promise<ModelProfile | undefined>;
  stdout?: NodeJS.WritableStream;
  stderr?: NodeJS.WritableStream & { isTTY?: boolean };
  env?: NodeJS.ProcessEnv;
}

export async function batchCommand(
  tasksPath: string,
  flags: BatchFlags,
  interrupts: Pick<Interrupts, "begin" | "end" | "session">,
  deps: BatchCommandDeps = {},
): Promise<number> {
  const env = deps.env ?? process.env;
  const stdout = deps.stdout ?? process.stdout;
  const stderr = deps.stderr ?? process.stderr;
  const {
    concurrency: concurrencyFlag,
    warm: warmFlag,
    results: resultsFlag,
    transcripts,
    retry: retryFlag,
    ...rest
  } = flags;
  // The batch's --max-budget-usd is over the batch; a task's own `maxBudgetUsd` stays the run's.
  const { maxBudgetUsd: budgetFlag, outputFormat, ...taskFlags } = rest;
  const format = outputFormat ?? "text";
  if (format !== "text" && format !== "json")
    throw new ConfigError(`--output-format must be text or json, got '${format}'`);
  const concurrency = positiveInt("--concurrency", concurrencyFlag) ?? defaultConcurrency();
  const warmSize = warmFlag === "0" ? 0 : (positiveInt("--warm", warmFlag) ?? concurrency);
  const retry = retryMode(retryFlag);
  const budget = budgetFlag === undefined ? undefined : Number(budgetFlag);
  if (budget !== undefined && !(Number.isFinite(budget) && budget > 0))
    throw new ConfigError(`--max-budget-usd must be a positive number, got '${budgetFlag}'`);

  const planned = planTasks(readTaskFile(tasksPath), taskFlags, env);
  // Every task's workspace, before anything is written: a results file or transcripts directory in
  // one of them is written without following links there, even before its task's sandbox opens.
  for (const p of planned) markWorkspaceWritable(p.sandboxConfig.workspace);
  const unpriced = planned.find((p) => p.agentConfig.pricing === undefined);
  if (budget !== undefined && unpriced)
    throw new ConfigError(
      `--max-budget-usd needs prices, and none are known for model '${unpriced.agentConfig.model}' (task '${unpriced.task.id}'): set HARNESS_PRICE_INPUT and HARNESS_PRICE_OUTPUT`,
    );
  const setups = await modelSetups(planned, env, deps.describeModel ?? describeAnthropicModel, (line) =>
    stderr.write(`harness: ${line}\n`),
  );
  const resultsPath = resolve(resultsFlag ?? defaultResultsPath(tasksPath));
  const transcriptsDir = resolve(transcripts ?? `${resultsPath.replace(/\.jsonl$/, "")}.transcripts`);
  const recorded = readResults(resultsPath);

  const progress = createProgress({ out: stderr, total: planned.length });
  if (recorded.unreadable > 0)
    progress.note(
      `${recorded.unreadable} unreadable line(s) in ${resultsPath} skipped (cut off by a crash?)`,
    );
  // One image build before any task: N tasks opening at once must not build it N times. A cluster's
  // nodes hold their images already (docs/scale-out.md).
  if (planned.some((p) => p.sandboxConfig.image === undefined && p.sandboxConfig.engine !== "kubernetes")) {
    await ensureSandboxImage(await connectDocker(env), (line) => progress.note(line));
  }

  const backoff = new SharedBackoff();
  const spend = new BatchSpend();
  const createModel = deps.createModel ?? anthropicModel;
  const names = new Set<string>();
  const { signal, release } = batchSignal(interrupts, progress);
  const writer = new ResultsWriter(resultsPath);
  const poolId = randomUUID();
  /** Kubernetes: the pod the warm pool made for each task, which its open takes by name. */
  const warmPods = new Map<PlannedTask, string>();
  try {
    const outcome = await runBatch({
      planned,
      recorded: recorded.byId,
      retry,
      concurrency,
      signal,
      maxBudgetUsd: budget,
      spentUsd: () => spend.usd,
      writer: {
        append: (result) => {
          try {
            writer.append(result);
          } catch (error) {
            if (error instanceof HostPathError) throw error;
            // A full disk: the batch ends as on SIGTERM, with one line naming the file; the result
            // not recorded makes its task run again the next time (the file holds whole lines only).
            interrupts.session.end({
              kind: "write",
              path: resultsPath,
              code: (error as NodeJS.ErrnoException).code,
            });
          }
        },
      },
      progress,
      rateLimitPauses: () => backoff.pauses,
      crashResult,
      warm: { size: warmSize, warm: (task) => warmTaskSandbox(task, poolId, warmPods) },
      runOne: async (task, taskSignal, warmed) => {
        const runId = transcriptName(transcriptsDir, task.task.id, names);
        const transcriptPath = transcriptPathOf(transcriptsDir, runId);
        const model = spend.track(
          withSharedBackoff(await createModel(task), backoff),
          task.agentConfig.pricing,
        );
        const { result, sandboxStartMs } = await runTask({
          task: task.task.task,
          agentConfig: task.agentConfig,
          sandboxConfig: task.sandboxConfig,
          model,
          setup: setups.get(task) as ModelSetup,
          runId,
          transcriptPath,
          diffPath: join(transcriptsDir, `${runId}.diff`),
          // Every task's container goes at its end: a batch leaves nothing running. One the warm pool
          // made is reused by the open (same workspace, same settings); the wait for it is part of
          // the sandbox start.
          openSandbox: async (config) => {
            const discard = await warmed;
            try {
              return await openSandbox(config, {
                session: interrupts.session,
                removeOnStop: true,
                warmPod: warmPods.get(task),
                progress: (line) => progress.note(`${task.task.id}: ${line}`),
              });
            } catch (error) {
              await discard?.();
              throw error;
            }
          },
          signal: taskSignal,
          session: interrupts.session,
          progress: (line) => progress.note(`${task.task.id}: ${line}`),
        });
        return {
          ...result,
          task_id: task.task.id,
          sandbox_start_ms: sandboxStartMs === undefined ? null : Math.round(sandboxStartMs),
        };
      },
    });
    progress.close();
    const { summary } = outcome;
    if (format === "json") stdout.write(`${JSON.stringify(summary)}\n`);
    else
      stdout.write(
        sanitizeForTerminal(formatSummary(summary, { results: resultsPath, transcripts: transcriptsDir })),
      );
    return summary.exit_code;
  } finally {
    writer.close();
    progress.close();
    release();
  }
}

/**
 * The warm pool's work for one task (src/sandbox/docker/warm/warm-container.ts): its container made,
 * started and checked ahead; undefined for a sandbox that is not warmed (copy, allowlist mode). On
 * Kubernetes (src/sandbox/kubernetes/warm-pod.ts) its pod is created ahead, whatever the mode, and
 * its name kept in `warmPods` for the task's open.
 */
async function warmTaskSandbox(
  planned: PlannedTask,
  poolId: string,
  warmPods: Map<PlannedTask, string>,
): Promise<Discard | undefined> {
  if (planned.sandboxConfig.engine === "kubernetes") {
    // --kube-warm-pool: the cluster's SandboxWarmPool keeps the pods warm.
    if (planned.sandboxConfig.warmPool !== undefined) return undefined;
    // Loaded only for Kubernetes: its client costs a Docker batch start-up time.
    const { warmPod } = await import("../../sandbox/kubernetes/warm-pod.js");
    const pod = await warmPod(planned.sandboxConfig, poolId);
    warmPods.set(planned, pod.name);
    return pod.discard;
  }
  const warm = await warmContainer(planned.sandboxConfig, poolId);
  return warm?.discard;
}

/**
 * Each task's model setup, its model asked about once per model, endpoint and window; a setting a
 * task's model cannot take is refused before any task runs, naming the task.
 */
async function modelSetups(
  planned: readonly PlannedTask[],
  env: NodeJS.ProcessEnv,
  describe: (planned: PlannedTask) => Promise<ModelProfile | undefined>,
  note: (line: string) => void,
): Promise<Map<PlannedTask, ModelSetup>> {
  const lookups = new Map<string, Promise<ModelLookup>>();
  const setups = new Map<PlannedTask, ModelSetup>();
  for (const task of planned) {
    const { model, baseURL, contextWindow } = task.agentConfig;
    const key = `${baseURL ?? ""} ${model} ${contextWindow ?? ""}`;
    let lookup = lookups.get(key);
    if (lookup === undefined) {
      lookup = lookupModelFor(task.agentConfig, env, () => describe(task));
      lookups.set(key, lookup);
      const notice = (await lookup).notice;
      if (notice !== undefined) note(notice);
    }
    try {
      setups.set(task, modelSetup(task.agentConfig, await lookup));
    } catch (error) {
      if (error instanceof ConfigError)
        throw new ConfigError(`task '${task.task.id}' (line ${task.task.line}): ${error.message}`, {
          cause: error,
        });
      throw error;
    }
  }
  return setups;
}

async function describeAnthropicModel(planned: PlannedTask): Promise<ModelProfile | undefined> {
  const { AnthropicModelClient } = await import("../../model/anthropic-model-client.js");
  const { apiKey, model, baseURL } = planned.agentConfig;
  return new AnthropicModelClient({ apiKey, model, ...(baseURL ? { baseURL } : {}) }).describeModel();
}

/** The Anthropic client with its own retries off: the batch's shared backoff retries instead. */
async function anthropicModel(planned: PlannedTask): Promise<ModelClient> {
  const { AnthropicModelClient } = await import("../../model/anthropic-model-client.js");
  const { apiKey, model, baseURL } = planned.agentConfig;
  return new AnthropicModelClient({ apiKey, model, maxRetries: 0, ...(baseURL ? { baseURL } : {}) });
}

/**
 * One signal for the whole batch: the first Ctrl-C (through `interrupts`) or anything else that ends
 * the session (SIGTERM, SIGHUP, output gone) aborts it. `release` ends the unit of work.
 */
function batchSignal(
  interrupts: Pick<Interrupts, "begin" | "end">,
  progress: BatchProgress,
): { signal: AbortSignal; release: () => void } {
  const signal = interrupts.begin();
  signal.addEventListener(
    "abort",
    () => progress.note("stopping: no new task starts; running tasks end and their containers are removed"),
    { once: true },
  );
  return { signal, release: () => interrupts.end() };
}

/** A result for a task whose run threw after all (a bug), so it is recorded like any other. */
function crashResult(planned: PlannedTask, error: unknown): BatchResult {
  const { agentConfig } = planned;
  const result = buildResult(
    {
      model: agentConfig.model,
      runId: planned.task.id,
      pricing: agentConfig.pricing,
      maxBudgetUsd: undefined,
    },
    {
      status: "error",
      exitCode: exitCodeForError(error),
      turns: 0,
      usage: { ...ZERO_USAGE },
      finalText: "",
      error,
      durationMs: 0,
      apiDurationMs: 0,
      transcriptPath: null,
    },
  );
  return { ...result, task_id: planned.task.id, sandbox_start_ms: null };
}

/** tasks.jsonl → tasks.results.jsonl beside it. */
function defaultResultsPath(tasksPath: string): string {
  const name = basename(tasksPath).replace(/\.jsonl?$/, "");
  return join(dirname(tasksPath), `${name}.results.jsonl`);
}

/** A file-safe name for the task's transcript, used neither by an earlier attempt nor by another task. */
function transcriptName(dir: string, id: string, taken: Set<string>): string {
  const safe = id.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 100) || "task";
  let name = safe;
  for (let n = 2; taken.has(name) || existsSync(join(dir, `${name}.jsonl`)); n += 1) name = `${safe}.${n}`;
  taken.add(name);
  return name;
}

function positiveInt(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0)
    throw new ConfigError(`${flag} must be a positive whole number, got '${value}'`);
  return n;
}

function retryMode(value: string | undefined): RetryMode {
  if (value === undefined) return "none";
  if (value === "failed" || value === "errors") return value;
  throw new ConfigError(`--retry must be failed or errors, got '${value}'`);
}
