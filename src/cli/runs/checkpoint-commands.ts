/**
 * `harness runs diff RUN [--step N]` and `harness runs restore RUN --step N --to DIR`: a run's
 * checkpoints (src/checkpoints/) read back. Contents come from the run's blobs in the state
 * directory, never from the workspace, which may have changed since.
 */
import { dirname, resolve } from "node:path";
import { changesBetween, formatChanges } from "../../checkpoints/checkpoint-diff.js";
import { checkpointsDirOf } from "../../checkpoints/checkpoint-paths.js";
import type { Manifest } from "../../checkpoints/checkpoint-types.js";
import { prepareTarget } from "../../checkpoints/restore.js";
import { readSteps, stepsOf } from "../../checkpoints/step-log.js";
import { ConfigError } from "../../errors.js";
import { namedRun } from "../../runs/run-to-continue.js";
import { runsDir } from "../../state/run-layout.js";
import { sanitizeForTerminal } from "../../terminal/sanitize.js";
import { readConversation } from "../../transcript/read-conversation.js";
import { EXIT } from "../exit-codes.js";
import { checkpointOf, ownerOf } from "./fork-run.js";
import { restoreCheckpoint } from "./restore-checkpoint.js";
import type { RunsIo } from "./runs-command.js";

/** `harness runs diff RUN [--step N] [--output-format json]`. */
export async function runsDiffCommand(
  id: string,
  flags: { step?: string; outputFormat?: string },
  io: RunsIo,
): Promise<number> {
  const format = flags.outputFormat ?? "text";
  if (format !== "text" && format !== "json")
    throw new ConfigError(`--output-format must be text or json, got '${format}'`);
  const run = namedRun(runsDir(io.env), id);
  let from: number;
  let to: number;
  if (flags.step === undefined) {
    const { steps } = stepsOf(readSteps(checkpointsDirOf(run.transcriptPath)));
    if (steps.length === 0) throw new ConfigError(`run ${run.id} has no checkpoints`);
    from = steps[0] as number;
    to = steps.at(-1) as number;
  } else {
    to = parseStep(flags.step);
    if (to === 0)
      throw new ConfigError("--step 0 is the workspace before the first call: it changed nothing");
    from = to - 1;
  }
  const before: Manifest = checkpointOf(run, from, "runs diff");
  const after: Manifest = checkpointOf(run, to, "runs diff");
  const changes = changesBetween(before, after, checkpointsDirOf(run.transcriptPath));
  if (format === "json") {
    io.stdout(`${JSON.stringify({ run: run.id, from, to, changes }, null, 2)}\n`);
    return EXIT.ok;
  }
  const what = flags.step === undefined ? `steps ${from} to ${to}` : `step ${to}`;
  if (changes.length === 0) {
    io.stdout(sanitizeForTerminal(`no files changed in ${what} of run ${run.id}\n`));
    return EXIT.ok;
  }
  // Contents came from the sandbox: control sequences are shown as escapes, never obeyed.
  io.stdout(sanitizeForTerminal(formatChanges(changes)));
  return EXIT.ok;
}

/** `harness runs restore RUN --step N --to DIR`. */
export async function runsRestoreCommand(
  id: string,
  flags: { step?: string; to?: string },
  io: RunsIo,
): Promise<number> {
  if (flags.step === undefined || flags.to === undefined)
    throw new ConfigError("runs restore needs --step N and --to DIR (a new or empty directory)");
  const step = parseStep(flags.step);
  const run = namedRun(runsDir(io.env), id);
  const manifest = checkpointOf(run, step, "runs restore");
  const target = resolve(flags.to);
  try {
    await prepareTarget(target);
  } catch (error) {
    throw new ConfigError(`runs restore: ${(error as Error).message}`);
  }
  const { workspace } = await readConversation(run.transcriptPath);
  const owner = await ownerOf(workspace, dirname(target));
  const { restored, lines } = await restoreCheckpoint(run.transcriptPath, { step, manifest }, target, owner);
  for (const line of lines) io.stderr(`harness: ${sanitizeForTerminal(line, { oneLine: true })}\n`);
  io.stdout(
    sanitizeForTerminal(
      `restored step ${step} of run ${run.id} into ${target}: ${restored.files} file(s), ${restored.directories} directorie(s), ${restored.symlinks} symlink(s), ${restored.bytes} bytes\n`,
    ),
  );
  return EXIT.ok;
}

function parseStep(text: string): number {
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(Number(text)))
    throw new ConfigError(`--step must be a step number (0, 1, 2, …), got '${text}'`);
  return Number(text);
}
