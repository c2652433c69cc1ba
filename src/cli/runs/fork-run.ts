/**
 * `harness run --fork RUN@N --workspace DIR "task"`: a new run that starts where step N of RUN left
 * off. Its workspace is checkpoint N restored into DIR (new or empty, owned like RUN's workspace) and
 * its conversation is RUN's up to the result of its Nth tool call; the task is the next user message.
 * Everything is checked before DIR is written and before Docker is touched.
 */
import { stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { checkpointsDirOf } from "../../checkpoints/checkpoint-paths.js";
import type { Manifest } from "../../checkpoints/checkpoint-types.js";
import { prepareTarget, type RestoreResult } from "../../checkpoints/restore.js";
import { manifestAt, readSteps, stepsOf } from "../../checkpoints/step-log.js";
import { ConfigError } from "../../errors.js";
import type { MessageParam } from "../../model/model-client.js";
import { namedRun, type RunToContinue } from "../../runs/run-to-continue.js";
import { runsDir } from "../../state/run-layout.js";
import { readConversation } from "../../transcript/read-conversation.js";
import { checkRebuiltConversation } from "./rebuilt-conversation.js";
import { restoreCheckpoint } from "./restore-checkpoint.js";

/** A run and step, as `RUN@N` names them. */
export interface StepRef {
  run: RunToContinue;
  step: number;
}

/** A fork ready to run: its workspace restored, its history read. */
export interface ForkedRun extends StepRef {
  /** The conversation of the first `step` steps. */
  messages: MessageParam[];
  /** What was written into the workspace. */
  restored: RestoreResult;
  /** What was left out of it, and the `.env` files the sandbox wrote: one line each. */
  notes: string[];
}

/** `RUN@N` → the run (id, prefix or transcript path) and step. Throws `ConfigError`. */
export function parseStepRef(text: string, flag: string, env: NodeJS.ProcessEnv): StepRef {
  const at = text.lastIndexOf("@");
  const step = Number(text.slice(at + 1));
  if (at <= 0 || !/^\d+$/.test(text.slice(at + 1)) || !Number.isSafeInteger(step))
    throw new ConfigError(`${flag} takes RUN@STEP (a run id or prefix, '@', a step number), got '${text}'`);
  try {
    return { run: namedRun(runsDir(env), text.slice(0, at)), step };
  } catch (error) {
    if (error instanceof ConfigError) throw new ConfigError(`${flag}: ${error.message}`);
    throw error;
  }
}

/** The manifest of checkpoint `step` of `run`; a `ConfigError` saying which steps exist when absent. */
export function checkpointOf(run: RunToContinue, step: number, flag: string): Manifest {
  const records = readSteps(checkpointsDirOf(run.transcriptPath));
  const manifest = manifestAt(records, step);
  if (manifest !== undefined) return manifest;
  const { steps, gaveUpAt } = stepsOf(records);
  const have = steps.length === 0 ? "none" : `${steps[0]}-${steps.at(-1)}`;
  const why =
    gaveUpAt === undefined ? "" : `; its checkpoints stopped at step ${gaveUpAt} (see harness runs show)`;
  throw new ConfigError(
    `${flag}: run ${run.id} has no checkpoint for step ${step} (checkpoints: ${have}${why})`,
  );
}

/** `thinkingOff`: the fork runs with `--thinking off`, so no thinking is sent back. */
export async function prepareFork(
  flags: { fork?: string; workspace?: string; continue?: boolean; resume?: string },
  env: NodeJS.ProcessEnv,
  thinkingOff = false,
): Promise<ForkedRun | undefined> {
  if (flags.fork === undefined) return undefined;
  if (flags.continue || flags.resume !== undefined)
    throw new ConfigError("--fork starts a new run: it cannot be used with --continue or --resume");
  if (flags.workspace === undefined)
    throw new ConfigError("--fork needs --workspace DIR: a new or empty directory for checkpoint's files");
  const ref = parseStepRef(flags.fork, "--fork", env);
  const manifest = checkpointOf(ref.run, ref.step, "--fork");
  const conversation = await readConversation(
    ref.run.transcriptPath,
    ref.step === 0
      ? undefined
      : {
          steps: ref.step,
          notRunText: `Error: not run: this run was forked from step ${ref.step} of run ${ref.run.id}, before this call.`,
        },
    { dropThinking: thinkingOff },
  );
  const rebuilt = checkRebuiltConversation(conversation, "--fork", ref.run.id, thinkingOff);
  const target = resolve(flags.workspace);
  try {
    await prepareTarget(target);
  } catch (error) {
    throw new ConfigError(`--fork: ${(error as Error).message}`);
  }
  const owner = await ownerOf(conversation.workspace, dirname(target));
  const { restored, lines } = await restoreCheckpoint(
    ref.run.transcriptPath,
    { step: ref.step, manifest },
    target,
    owner,
  );
  return {
    ...ref,
    messages: ref.step === 0 ? [] : conversation.messages,
    restored,
    notes: [...(ref.step === 0 ? [] : rebuilt), ...lines],
  };
}

/** The owner of the recorded workspace, or (gone) of the directory the new one is made in. */
export async function ownerOf(
  workspace: string | undefined,
  fallback: string,
): Promise<{ uid: number; gid: number } | undefined> {
  for (const path of [workspace, fallback]) {
    if (path === undefined) continue;
    const info = await stat(path).catch(() => undefined);
    if (info !== undefined) return { uid: info.uid, gid: info.gid };
  }
  return undefined;
}
