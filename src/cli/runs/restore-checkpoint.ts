/**
 * A checkpoint written into a new or empty directory, for `runs restore`, `run --fork` and `replay
 * --from` alike: what restore-policy.ts leaves out (what the sandbox made of git's surface and of the
 * paths host programs run) is not written, one line each; each `.env` the sandbox wrote is written
 * and its content recorded as sandbox-written, so harness does not load it there either.
 */
import { join } from "node:path";
import { checkpointsDirOf } from "../../checkpoints/checkpoint-paths.js";
import type { IgnoredPaths, Manifest } from "../../checkpoints/checkpoint-types.js";
import { type RestoreResult, restoreManifest } from "../../checkpoints/restore.js";
import { planRestore } from "../../checkpoints/restore-policy.js";
import { latestManifest, notCheckpointedAt, readSteps } from "../../checkpoints/step-log.js";
import { markSandboxWritten } from "../dotenv/dotenv-records.js";

export interface RestoredCheckpoint {
  restored: RestoreResult;
  /** One line per path left out and per sandbox-written `.env`, for stderr (sandbox text: sanitize). */
  lines: string[];
}

/**
 * Writes `manifest` (a checkpoint of the run whose transcript is `transcriptPath`) into `target`,
 * compared with the run's first checkpoint, the workspace as the run found it.
 */
export async function restoreCheckpoint(
  transcriptPath: string,
  checkpoint: { step: number; manifest: Manifest },
  target: string,
  owner: { uid: number; gid: number } | undefined,
): Promise<RestoredCheckpoint> {
  const { manifest } = checkpoint;
  const checkpointsDir = checkpointsDirOf(transcriptPath);
  const records = readSteps(checkpointsDir);
  const first = records[0];
  const baseline = first === undefined ? new Map() : latestManifest([first]);
  const plan = await planRestore(baseline, manifest, checkpointsDir, target);
  for (const env of plan.sandboxEnvFiles) markSandboxWritten(env.sha256);
  const replaced = new Map(plan.withheld.flatMap((w) => (w.previous ? [[w.path, w.previous] as const] : [])));
  const restored = await restoreManifest(manifest, target, {
    checkpointsDir,
    owner,
    withheld: plan.withheld.map((w) => w.path),
    replaced,
  });
  const lines = [
    ...notCheckpointedLine(notCheckpointedAt(records, checkpoint.step)),
    ...plan.withheld.map((w) =>
      w.previous === undefined
        ? `not restored: ${w.path} (${w.reason})`
        : `restored ${w.path} as it was when the run began (${w.reason})`,
    ),
    ...plan.sandboxEnvFiles.map((env) => {
      const path = join(target, env.path);
      return `restored ${path}, written during the run: harness will not load its settings until you read it and run 'harness trust-env ${path}'`;
    }),
  ];
  return { restored, lines };
}

/**
 * One line naming what git's ignore rules left out of the checkpoint (so not written here). A restore
 * writes only into a new or empty directory, with O_EXCL: it never removes nor overwrites anything,
 * ignored or not, wherever the original files still are.
 */
function notCheckpointedLine(ignored: IgnoredPaths): string[] {
  if (ignored.paths.length === 0) return [];
  const shown = ignored.paths.slice(0, 10);
  const more = ignored.paths.length - shown.length + (ignored.more ?? 0);
  const names = shown.join(", ") + (more > 0 ? ` and ${more} more` : "");
  return [
    `not restored: ${names} (ignored by .gitignore rules, so not checkpointed; --checkpoints all keeps them)`,
  ];
}
