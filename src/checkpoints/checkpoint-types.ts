/**
 * What a checkpoint records: the workspace as a map from path to entry (a manifest), and, per step,
 * only what changed since the step before (a delta), so a step that changed nothing costs one short
 * line. File contents are blobs named by their SHA-256 (blob-store.ts).
 */

/** One path of the workspace as a checkpoint saw it. */
export interface CheckpointEntry {
  /** Only these three kinds are recorded: fifos, sockets and devices are left out (and named in `skipped`). */
  type: "file" | "directory" | "symlink";
  /** Permission bits (0o777): set-id and sticky bits are never kept nor restored. */
  mode: number;
  /** Content bytes (files only; 0 otherwise). */
  size: number;
  /** lstat's mtime in ms: with `ctimeMs`, `ino` and `size`, how an unchanged file is told without reading it. */
  mtimeMs: number;
  /** lstat's ctime in ms: catches a rewrite that put the old mtime back (touch -d). */
  ctimeMs: number;
  /** lstat's inode: a file replaced by another with the same size and times is still read. */
  ino: number;
  /** Hex SHA-256 of the content, the blob's name (files only). */
  sha256?: string;
  /** Target of a symlink, as stored in the link (never followed). */
  linkname?: string;
  /**
   * It changed (ctime) less than RACY_MS before it was read: a write in the same clock tick after the
   * read would leave size and times as they were, so the next snapshot reads it again rather than
   * trusting its lstat (git's "racily clean" entries).
   */
  racy?: true;
}

/** Workspace-relative path ("src/a.py", `/`-separated) to entry; parents come before children. */
export type Manifest = Map<string, CheckpointEntry>;

/** Added, changed (content, mode, type or link target), removed. */
export interface ChangeCounts {
  added: number;
  changed: number;
  removed: number;
}

/**
 * One line of a run's `steps.jsonl`: the workspace after tool call `step` (0: before the first one),
 * as the changes since the line before it. A continued run adds a line for the step it goes on from
 * (what changed between the runs); the last line of a step is what the step left.
 */
export interface StepRecord {
  /** The step: tool calls answered in the transcript before this point. */
  step: number;
  /** The `tool_use` id of the call (absent for a baseline). */
  callId?: string;
  /** When the snapshot was taken, ISO-8601. */
  time: string;
  /** Path to its new entry, or null when it was removed. */
  delta: Record<string, CheckpointEntry | null>;
  counts: ChangeCounts;
  /** Set when the snapshot gave up (a limit, an unreadable root): this line's delta is empty and no later step is recorded. */
  gaveUp?: string;
  /** Paths left out of this snapshot (special files, unreadable), with why; at most a few are named. */
  skipped?: SkippedPath[];
  /**
   * The paths git's ignore rules left out (not checkpointed: a restore does not bring them back),
   * set when they differ from the line before; absent: as the line before (none on the first).
   */
  notCheckpointed?: IgnoredPaths;
}

/** Top-most paths ignore rules left out (a directory is named, not what it holds). */
export interface IgnoredPaths {
  /** Sorted as walked, at most a few hundred. */
  paths: string[];
  /** How many more were left out and not named. */
  more?: number;
}

/** A path a snapshot did not record, and why. */
export interface SkippedPath {
  path: string;
  reason: string;
}

/** How much one snapshot may do before it gives up (with a note, never hanging). */
export interface SnapshotLimits {
  /** Most entries walked (files, directories, links, skipped ones). */
  maxEntries: number;
  /** Most content bytes read for new or changed files (copy mode: for all files). */
  maxReadBytes: number;
  /** Most wall time, in ms: a slow or stuck file system (a network mount) ends the snapshot, not the run. */
  maxMs: number;
}

export const DEFAULT_SNAPSHOT_LIMITS: SnapshotLimits = {
  maxEntries: 200_000,
  maxReadBytes: 1024 * 1024 * 1024,
  maxMs: 60_000,
};
