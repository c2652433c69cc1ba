/**
 * Where checkpoints live on the host, in harness's state directory, outside every workspace:
 * blobs shared by all runs in `<state>/checkpoints/blobs/`, and per run `<runs>/<id>.checkpoints/`
 * beside the transcript (so retention removes it with the run) holding `steps.jsonl` and a hard link
 * to every blob the run refers to. A blob whose only link is the shared one belongs to no run any
 * more and is swept (blob-sweep.ts); a run's size counts each of its blobs shared among the runs
 * holding it (run-files.ts).
 */
import { join } from "node:path";
import { CHECKPOINTS_SUFFIX, runsDir, sharedBlobsDirOf } from "../state/run-layout.js";

export { CHECKPOINTS_SUFFIX };
export const STEPS_FILE = "steps.jsonl";

/** `<state>/checkpoints/blobs`: every run's blobs, by SHA-256. */
export function sharedBlobsDir(env: NodeJS.ProcessEnv = process.env): string {
  return sharedBlobsDirOf(runsDir(env));
}

/** `<runs>/<id>.checkpoints` for run `id`. */
export function runCheckpointsDir(id: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(runsDir(env), `${id}${CHECKPOINTS_SUFFIX}`);
}

/** The checkpoints directory of the run whose transcript is `transcriptPath` (beside it). */
export function checkpointsDirOf(transcriptPath: string): string {
  return `${transcriptPath.replace(/\.jsonl$/, "")}${CHECKPOINTS_SUFFIX}`;
}

/** `ab/abcdef…`: 256 fan-out directories keep any one directory small. */
export function blobRelPath(sha256: string): string {
  return join(sha256.slice(0, 2), sha256);
}
