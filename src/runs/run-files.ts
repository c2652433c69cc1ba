/**
 * The files of each run in the runs directory, from names and `lstat` only (no file is opened), so
 * retention can run after every `harness run` for the price of one directory listing. Another harness
 * process may remove files while this looks: an entry that vanished is skipped, never an error.
 */
import { type Dirent, lstatSync, readdirSync, type Stats } from "node:fs";
import { join } from "node:path";
import { CHECKPOINTS_SUFFIX, OUTPUTS_SUFFIX, TRANSCRIPT_SUFFIX } from "../state/run-layout.js";

/** One run's files on disk. */
export interface RunFiles {
  /** The run id: the file name without `.jsonl` / `.outputs`. */
  id: string;
  /** The transcript, when there is one (an outputs directory can be left without it). */
  transcriptPath?: string;
  /** Bytes of the transcript (0 without one). */
  transcriptBytes: number;
  /** Last modification of the transcript, ms since the epoch (0 without one). */
  transcriptModifiedMs: number;
  /** The saved-outputs directory, when there is one. */
  outputsPath?: string;
  /** Bytes of the files in the outputs directory. */
  outputsBytes: number;
  /** The checkpoints directory (src/checkpoints/), when there is one. */
  checkpointsPath?: string;
  /**
   * Bytes of its checkpoints: steps.jsonl, and each blob's size shared among the runs that hold it
   * (a blob has one hard link per run plus the shared store's), so the runs' sum is what is stored.
   */
  checkpointsBytes: number;
  /** Last modification of any of its files, ms since the epoch. */
  modifiedMs: number;
}

/** What the runs directory holds, or why it could not be read. */
export interface RunsDirScan {
  /** The runs, in no particular order. */
  runs: RunFiles[];
  /** Set when the directory exists but could not be listed (permissions, I/O). */
  error?: string;
}

/** Scans `dir` (not recursively, but into each `.outputs` directory). A missing `dir` has no runs. */
export function scanRunsDir(dir: string): RunsDirScan {
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (error) {
    if (isGone(error)) return { runs: [] };
    return { runs: [], error: describeFsError(error) };
  }
  const byId = new Map<string, RunFiles>();
  const runOf = (id: string): RunFiles => {
    let run = byId.get(id);
    if (run === undefined) {
      run = {
        id,
        transcriptBytes: 0,
        transcriptModifiedMs: 0,
        outputsBytes: 0,
        checkpointsBytes: 0,
        modifiedMs: 0,
      };
      byId.set(id, run);
    }
    return run;
  };
  for (const entry of entries) {
    // Links are not followed nor managed: harness never writes one here.
    if (entry.isFile() && entry.name.endsWith(TRANSCRIPT_SUFFIX)) {
      const path = join(dir, entry.name);
      const stats = lstatOrUndefined(path);
      if (stats === undefined) continue;
      const run = runOf(entry.name.slice(0, -TRANSCRIPT_SUFFIX.length));
      run.transcriptPath = path;
      run.transcriptBytes = stats.size;
      run.transcriptModifiedMs = stats.mtimeMs;
      run.modifiedMs = Math.max(run.modifiedMs, stats.mtimeMs);
    } else if (entry.isDirectory() && entry.name.endsWith(OUTPUTS_SUFFIX)) {
      const path = join(dir, entry.name);
      const usage = directoryUsage(path);
      if (usage === undefined) continue;
      const run = runOf(entry.name.slice(0, -OUTPUTS_SUFFIX.length));
      run.outputsPath = path;
      run.outputsBytes = usage.bytes;
      run.modifiedMs = Math.max(run.modifiedMs, usage.modifiedMs);
    } else if (entry.isDirectory() && entry.name.endsWith(CHECKPOINTS_SUFFIX)) {
      const path = join(dir, entry.name);
      const usage = directoryUsage(path, true);
      if (usage === undefined) continue;
      const run = runOf(entry.name.slice(0, -CHECKPOINTS_SUFFIX.length));
      run.checkpointsPath = path;
      run.checkpointsBytes = usage.bytes;
      run.modifiedMs = Math.max(run.modifiedMs, usage.modifiedMs);
    }
  }
  return { runs: [...byId.values()] };
}

/**
 * Bytes and latest mtime of the files under `dir` (the directory's own mtime counts too). With
 * `sharedLinks`, a file with several hard links counts its size divided among all but one of them.
 */
function directoryUsage(dir: string, sharedLinks = false): { bytes: number; modifiedMs: number } | undefined {
  const own = lstatOrUndefined(dir);
  if (own === undefined) return undefined;
  let bytes = 0;
  let modifiedMs = own.mtimeMs;
  let entries: Dirent[] = [];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    // Unreadable: its size is unknown, it is still a run's outputs.
  }
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      const inner = directoryUsage(path, sharedLinks);
      bytes += inner?.bytes ?? 0;
      modifiedMs = Math.max(modifiedMs, inner?.modifiedMs ?? 0);
      continue;
    }
    const stats = lstatOrUndefined(path);
    const holders = sharedLinks && stats !== undefined && stats.nlink > 2 ? stats.nlink - 1 : 1;
    bytes += Math.ceil((stats?.size ?? 0) / holders);
    modifiedMs = Math.max(modifiedMs, stats?.mtimeMs ?? 0);
  }
  return { bytes, modifiedMs };
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path);
  } catch {
    return undefined;
  }
}

/** ENOENT/ENOTDIR: the file is not (or no longer) there. */
function isGone(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}

/** "EACCES: permission denied, …" → the message, without the stack. */
export function describeFsError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
