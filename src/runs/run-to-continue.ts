/**
 * Which past run `harness run --continue` and `--resume ID` go on with: the run most recently active
 * in a workspace, or the one an id, a unique prefix of one, or a transcript path names.
 */
import { existsSync } from "node:fs";
import { basename } from "node:path";
import { ConfigError } from "../errors.js";
import { managedRunIdOf, TRANSCRIPT_SUFFIX } from "../state/run-layout.js";
import { findRun, listRuns } from "./run-catalog.js";
import { scanRunsDir } from "./run-files.js";

/** A run found to continue. */
export interface RunToContinue {
  /** Its id (the transcript's name without `.jsonl`). */
  id: string;
  /** Its transcript, which the continued run appends to. */
  transcriptPath: string;
}

/**
 * The run in `dir` whose first run_start records `workspace` (a real path) and whose files changed
 * last: a run continued yesterday is "the last run" over one started after it and never continued.
 * Undefined when the workspace has none.
 */
export function newestRunOfWorkspace(
  dir: string,
  workspace: string,
  env?: NodeJS.ProcessEnv,
): RunToContinue | undefined {
  const runs = listRuns(dir, env === undefined ? {} : { env })
    .filter((run) => run.workspace === workspace && run.transcriptPath !== undefined)
    .sort((a, b) => b.modifiedMs - a.modifiedMs || (a.id < b.id ? 1 : -1));
  const newest = runs[0];
  if (newest?.transcriptPath === undefined) return undefined;
  return { id: newest.id, transcriptPath: newest.transcriptPath };
}

/**
 * The run `query` names: a transcript path (it has a "/" or ends with `.jsonl`, and exists), else a
 * run id or unique prefix in `dir`. Throws `ConfigError` (from `findRun`) when none or several match.
 */
export function namedRun(dir: string, query: string): RunToContinue {
  if ((query.includes("/") || query.endsWith(TRANSCRIPT_SUFFIX)) && existsSync(query)) {
    return { id: managedRunIdOf(query, dir) ?? basename(query, TRANSCRIPT_SUFFIX), transcriptPath: query };
  }
  const scan = scanRunsDir(dir);
  if (scan.error !== undefined) throw new ConfigError(`cannot list the runs directory: ${scan.error}`);
  const run = findRun(scan.runs, query);
  if (run.transcriptPath === undefined)
    throw new ConfigError(
      `run ${run.id} has no transcript (only saved outputs in ${run.outputsPath ?? dir})`,
    );
  return { id: run.id, transcriptPath: run.transcriptPath };
}
