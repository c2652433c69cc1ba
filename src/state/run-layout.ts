/**
 * The run layout, one home for it: where past runs live and what their file names say. `harness run`
 * names a run `<ISO start time with ":" and "." as "-">-<pid>` (newRunId) and writes `<runId>.jsonl`
 * plus, for cut outputs, `<runId>.outputs/` (src/tools/output-store.ts) in the runs directory; `runs/`
 * reads them back with the same functions. Only that directory is harness's to list, remove and prune: a transcript written
 * elsewhere with `--transcript` is the user's file.
 */
import { join, relative, resolve, sep } from "node:path";
import { harnessStateDir } from "./state-dir.js";

/** `$XDG_STATE_HOME/harness/runs`, or `~/.local/state/harness/runs`. */
export function runsDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(harnessStateDir(env), "runs");
}

export const TRANSCRIPT_SUFFIX = ".jsonl";
export const OUTPUTS_SUFFIX = ".outputs";
/** A run's checkpoints (src/checkpoints/): steps.jsonl and hard links to its blobs. */
export const CHECKPOINTS_SUFFIX = ".checkpoints";

/** `2026-11-30T09-34-59-982Z-12345`: a name harness gave; the groups are the time and the pid. */
const RUN_ID = /^(\d{4}-\d\d-\d\dT\d\d)-(\d\d)-(\d\d)-(\d{3})Z-(\d+)$/;

/** The id `harness run` gives a new run: its start time and its pid (RUN_ID). */
export function newRunId(now: Date = new Date(), pid: number = process.pid): string {
  return `${now.toISOString().replace(/[:.]/g, "-")}-${pid}`;
}

/**
 * Where a transcript's cut outputs are saved: beside it, `<name>.outputs` (a run harness manages:
 * outputsPathOf; a `--transcript` file elsewhere: beside that file, outside the workspace).
 */
export function outputsDirOf(transcriptPath: string): string {
  const base = transcriptPath.endsWith(TRANSCRIPT_SUFFIX)
    ? transcriptPath.slice(0, -TRANSCRIPT_SUFFIX.length)
    : transcriptPath;
  return `${base}${OUTPUTS_SUFFIX}`;
}

/** True when `id` has the shape of a name `harness run` gives (time and pid). */
export function isHarnessRunId(id: string): boolean {
  return RUN_ID.test(id);
}

/** The pid in a harness run id, or undefined for another name. */
export function pidOfRunId(id: string): number | undefined {
  const pid = RUN_ID.exec(id)?.[5];
  return pid === undefined ? undefined : Number(pid);
}

/** The start time (ms since the epoch) in a harness run id, or undefined for another name. */
export function startOfRunId(id: string): number | undefined {
  const match = RUN_ID.exec(id);
  if (match === null) return undefined;
  const ms = Date.parse(`${match[1]}:${match[2]}:${match[3]}.${match[4]}Z`);
  return Number.isNaN(ms) ? undefined : ms;
}

/**
 * The shared checkpoint blobs beside runs directory `dir` (`<state>/runs` → `<state>/checkpoints/blobs`),
 * so a prune of one runs directory sweeps the store its runs link into.
 */
export function sharedBlobsDirOf(dir: string): string {
  return join(dir, "..", "checkpoints", "blobs");
}

/** The transcript path of run `id` in `dir`. */
export function transcriptPathOf(dir: string, id: string): string {
  return join(dir, `${id}${TRANSCRIPT_SUFFIX}`);
}

/**
 * The run id of `path` when it is a transcript directly inside `dir` (a run harness manages), else
 * undefined: a `--transcript` file elsewhere is never pruned.
 */
export function managedRunIdOf(path: string, dir: string): string | undefined {
  const rel = relative(resolve(dir), resolve(path));
  if (rel === "" || rel.startsWith("..") || rel.includes(sep) || !rel.endsWith(TRANSCRIPT_SUFFIX))
    return undefined;
  return rel.slice(0, -TRANSCRIPT_SUFFIX.length);
}
