/**
 * One checkpoint of a host directory: walks it with lstat only, through beneath.ts (each directory
 * opened through its parent's descriptor, never through a symlink), and reads only regular files
 * whose lstat (size, mtime, ctime, inode, mode) differs from the previous manifest. A symlink is
 * recorded as its target text and never followed; fifos, sockets and devices are named and left out;
 * a file is opened with O_NOFOLLOW | O_NONBLOCK and read only when fstat says it is a regular file, so
 * a file swapped for a link or a fifo during the walk is never followed nor waited on.
 *
 * Nothing in the workspace is executed or interpreted: no git, no hooks, no config files read.
 * Synchronous on purpose: it runs between tool calls, when nothing else waits, and a tree of 10,000
 * unchanged files costs 10,000 lstat calls, which the synchronous API makes several times cheaper.
 */

import { createHash, type Hash } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  lstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  type Stats,
  statSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { specialKind } from "../sandbox/copy/workspace-scan.js";
import { type BeneathDir, withBeneath } from "../sandbox/host/paths/beneath.js";
import { type BlobStore, StoreWriteError, writingTo } from "./blob-store.js";
import type {
  ChangeCounts,
  CheckpointEntry,
  IgnoredPaths,
  Manifest,
  SkippedPath,
  SnapshotLimits,
  StepRecord,
} from "./checkpoint-types.js";
import { isIgnored, parseIgnoreFile, type RuleSet } from "./git-ignore.js";
import { MAX_IGNORE_FILE_BYTES, readIgnoreFile } from "./ignore-sources.js";

/** Files up to this size are read into memory, hashed, and written only when new. */
const IN_MEMORY_BYTES = 8 * 1024 * 1024;
const CHUNK_BYTES = 1024 * 1024;
/** File timestamps come from a coarse clock (a few ms per tick); this is well above any tick. */
const RACY_MS = 100;
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
/** Ignored paths named in a checkpoint; more are only counted (a `*.log` over a huge tree). */
const MAX_IGNORED_NAMED = 500;

export interface SnapshotInput {
  /** The workspace (a real absolute path). */
  root: string;
  /** The manifest of the previous step (empty for the first). */
  previous: Manifest;
  store: BlobStore;
  limits: SnapshotLimits;
  /** Paths left out (copy mode's ignore rules: `.harness/` and `.harnessignore`). */
  ignored?: (path: string, isDirectory: boolean) => boolean;
  /**
   * git's ignore rules (git-ignore.ts): a path they ignore is neither walked nor stored, only named
   * in `ignored`. `global` is the user's global excludes; the walk adds `.git/info/exclude`, each
   * `.gitignore` it meets and the root's `.harnessignore`. Absent (`--checkpoints all`): none apply.
   */
  gitIgnore?: { global?: RuleSet | undefined };
  /** Told of each directory opened: its relative path, inode and descriptor path (change-watch.ts). */
  onDirectory?: (rel: string, ino: number, path: string) => void;
}

export interface Snapshot {
  /** The workspace now; undefined when the snapshot gave up. */
  manifest?: Manifest;
  /** Paths whose entry differs from the previous manifest (null: removed). */
  delta: Record<string, CheckpointEntry | null>;
  counts: ChangeCounts;
  skipped: SkippedPath[];
  /** Why it gave up (a limit was reached, the root is gone). */
  gaveUp?: string;
  /** Content bytes read. */
  bytesRead: number;
  /** Top-most paths git's ignore rules left out (only with `gitIgnore`). */
  ignored?: IgnoredPaths;
}

class GiveUp extends Error {}

export async function takeSnapshot(input: SnapshotInput): Promise<Snapshot> {
  const { previous, store, limits } = input;
  const manifest: Manifest = new Map();
  const skipped: SkippedPath[] = [];
  let entries = 0;
  let bytesRead = 0;
  const deadline = Date.now() + limits.maxMs;
  const ignoredPaths: IgnoredPaths = { paths: [] };

  /** The rules of an ignore file in `dir` (never through a link), or undefined (a note when too large). */
  const rulesIn = (dir: BeneathDir, name: string, rel: string): RuleSet | undefined => {
    const content = readIgnoreFile(dir.at(name));
    if (content === "absent") return undefined;
    const path = rel === "" ? name : `${rel}/${name}`;
    if (content === "too large") {
      skipped.push({
        path,
        reason: `over ${MAX_IGNORE_FILE_BYTES / 1024} KiB: its ignore rules are not applied`,
      });
      return undefined;
    }
    return parseIgnoreFile(content, rel);
  };

  const readFile = (dir: BeneathDir, name: string, path: string): CheckpointEntry | undefined => {
    const readAt = Date.now();
    let fd: number;
    try {
      fd = openSync(dir.at(name), READ_FLAGS);
    } catch (error) {
      skipped.push({ path, reason: `not read (${(error as NodeJS.ErrnoException).code})` });
      return undefined;
    }
    try {
      const info = fstatSync(fd);
      if (!info.isFile()) {
        skipped.push({ path, reason: "changed while read (no longer a regular file)" });
        return undefined;
      }
      const hash = createHash("sha256");
      const budget = limits.maxReadBytes - bytesRead;
      let size: number;
      if (info.size <= IN_MEMORY_BYTES) {
        const content = readAll(fd, info.size, budget);
        size = content.length;
        bytesRead += size;
        const sha256 = hash.update(content).digest("hex");
        store.put(sha256, content);
        return entryOf(info, { size, sha256 }, readAt);
      }
      const temp = store.tempPath();
      try {
        size = copyToFile(fd, temp, hash, budget);
      } catch (error) {
        unlinkQuietly(temp);
        throw error;
      }
      bytesRead += size;
      const sha256 = hash.digest("hex");
      store.settle(temp, sha256, size);
      return entryOf(info, { size, sha256 }, readAt);
    } catch (error) {
      if (error instanceof GiveUp || error instanceof StoreWriteError) throw error;
      if (error instanceof OverBudget)
        throw new GiveUp(`more than ${limits.maxReadBytes} bytes of changed files to read`);
      skipped.push({ path, reason: `not read (${(error as NodeJS.ErrnoException).code ?? String(error)})` });
      return undefined;
    } finally {
      closeSync(fd);
    }
  };

  /**
   * `above`: the ignore rules that reach this directory, in rising precedence (global excludes,
   * `.git/info/exclude`, each `.gitignore` from the root down); `top`: the root's `.harnessignore`,
   * above them all; `rulesApply`: false inside a `.git`.
   */
  const walk = async (
    beneath: import("../sandbox/host/paths/beneath.js").BeneathRoot,
    parts: string[],
    above: readonly RuleSet[],
    top: readonly RuleSet[],
    rulesApply: boolean,
  ) => {
    const rel = parts.join("/");
    let dir: BeneathDir;
    let names: string[];
    try {
      dir = await beneath.dir(parts);
      // A directory whose name is not UTF-8 comes as bytes (byte-names.ts); checkpoints skip such names.
      const path = typeof dir.path === "string" ? dir.path : dir.path.toString("utf8");
      if (input.onDirectory !== undefined) input.onDirectory(rel, statSync(dir.path).ino, path);
      names = readdirSync(dir.path).sort();
    } catch (error) {
      if (parts.length === 0) throw new GiveUp(`the workspace cannot be read (${codeOf(error)})`);
      skipped.push({ path: rel, reason: `unreadable directory (${codeOf(error)})` });
      return;
    }
    let below = above;
    if (input.gitIgnore !== undefined && rulesApply && names.includes(".gitignore")) {
      const own = rulesIn(dir, ".gitignore", rel);
      if (own !== undefined) below = [...above, own];
    }
    const sets = top.length === 0 ? below : [...below, ...top];
    const subdirectories: string[] = [];
    for (const name of names) {
      entries += 1;
      if (entries > limits.maxEntries)
        throw new GiveUp(`more than ${limits.maxEntries} files and directories`);
      if (entries % 256 === 0 && Date.now() > deadline)
        throw new GiveUp(`the snapshot took longer than ${limits.maxMs / 1000} s`);
      const path = rel === "" ? name : `${rel}/${name}`;
      let info: Stats;
      try {
        info = lstatSync(dir.at(name));
      } catch {
        continue; // Gone since readdir.
      }
      // `.git` is never matched (git does not list it), so the checkpoint keeps it as before.
      if (sets.length > 0 && name !== ".git" && isIgnored(sets, path, info.isDirectory())) {
        if (ignoredPaths.paths.length < MAX_IGNORED_NAMED) ignoredPaths.paths.push(path);
        else ignoredPaths.more = (ignoredPaths.more ?? 0) + 1;
        continue;
      }
      if (input.ignored?.(path, info.isDirectory())) continue;
      const before = previous.get(path);
      if (info.isDirectory()) {
        manifest.set(path, entryOf(info, { size: 0 }));
        subdirectories.push(name);
      } else if (info.isSymbolicLink()) {
        if (before?.type === "symlink" && before.racy === undefined && sameStat(before, info)) {
          manifest.set(path, before);
          continue;
        }
        try {
          const readAt = Date.now();
          manifest.set(path, entryOf(info, { size: 0, linkname: readlinkSync(dir.at(name)) }, readAt));
        } catch (error) {
          skipped.push({ path, reason: `changed while read (${codeOf(error)})` });
        }
      } else if (info.isFile()) {
        if (before?.type === "file" && before.racy === undefined && sameStat(before, info)) {
          manifest.set(path, before);
          continue;
        }
        const entry = readFile(dir, name, path);
        if (entry !== undefined) manifest.set(path, entry);
      } else {
        skipped.push({ path, reason: specialKind(info) });
      }
    }
    // After the names of this directory: `dir` is no longer needed once its children are opened.
    // git never applies ignore rules inside a `.git`; the checkpoint keeps it whole, as before.
    for (const name of subdirectories) {
      const inGit = name === ".git" || !rulesApply;
      await walk(beneath, [...parts, name], inGit ? [] : below, inGit ? [] : top, !inGit);
    }
  };

  /** The rules that apply from the root: global excludes, then `.git/info/exclude`; `.harnessignore`. */
  const rootRules = async (
    beneath: import("../sandbox/host/paths/beneath.js").BeneathRoot,
  ): Promise<{ above: RuleSet[]; top: RuleSet[] }> => {
    if (input.gitIgnore === undefined) return { above: [], top: [] };
    const above: RuleSet[] = [];
    if (input.gitIgnore.global !== undefined) above.push(input.gitIgnore.global);
    try {
      const exclude = rulesIn(await beneath.dir([".git", "info"]), "exclude", ".git/info");
      if (exclude !== undefined) above.push({ ...exclude, base: "" });
    } catch {
      // No `.git/info` directory (or a link there): no repository excludes.
    }
    const root = await beneath.dir([]);
    const harness = rulesIn(root, ".harnessignore", "");
    return { above, top: harness === undefined ? [] : [harness] };
  };

  try {
    await withBeneath(input.root, async (beneath) => {
      const { above, top } = await rootRules(beneath).catch(() => ({ above: [], top: [] }));
      await walk(beneath, [], above, top, true);
    });
  } catch (error) {
    if (!(error instanceof GiveUp)) throw error;
    return {
      delta: {},
      counts: { added: 0, changed: 0, removed: 0 },
      skipped,
      gaveUp: error.message,
      bytesRead,
    };
  }
  const { delta, counts } = compareManifests(previous, manifest);
  return {
    manifest,
    delta,
    counts,
    skipped,
    bytesRead,
    ...(input.gitIgnore === undefined ? {} : { ignored: ignoredPaths }),
  };
}

/** What differs between two manifests, and how many paths were added, changed, removed. */
export function compareManifests(
  before: Manifest,
  after: Manifest,
): { delta: StepRecord["delta"]; counts: ChangeCounts } {
  const delta: StepRecord["delta"] = {};
  const counts: ChangeCounts = { added: 0, changed: 0, removed: 0 };
  for (const [path, entry] of after) {
    const old = before.get(path);
    if (old === entry) continue;
    if (old === undefined) counts.added += 1;
    else if (differsInContent(old, entry)) counts.changed += 1;
    else if (sameEntry(old, entry)) continue;
    delta[path] = entry;
  }
  for (const path of before.keys()) {
    if (!after.has(path)) {
      delta[path] = null;
      counts.removed += 1;
    }
  }
  return { delta, counts };
}

/** Type, content, link target or permission bits differ (a new mtime alone is no change). */
export function differsInContent(a: CheckpointEntry, b: CheckpointEntry): boolean {
  return a.type !== b.type || a.sha256 !== b.sha256 || a.linkname !== b.linkname || a.mode !== b.mode;
}

function sameEntry(a: CheckpointEntry, b: CheckpointEntry): boolean {
  return !differsInContent(a, b) && sameStat(a, b) && a.size === b.size && a.racy === b.racy;
}

function sameStat(
  entry: CheckpointEntry,
  info: Pick<Stats, "size" | "mtimeMs" | "ctimeMs" | "ino" | "mode">,
) {
  return (
    entry.size === (entry.type === "file" ? info.size : entry.size) &&
    entry.mtimeMs === info.mtimeMs &&
    entry.ctimeMs === info.ctimeMs &&
    entry.ino === info.ino &&
    entry.mode === (info.mode & 0o777)
  );
}

/** The entry for what was read: the descriptor's fstat, which is the file read (whatever lstat saw). */
function entryOf(
  info: Stats,
  fields: { size: number; sha256?: string; linkname?: string },
  readAt?: number,
): CheckpointEntry {
  const type = info.isDirectory() ? "directory" : info.isSymbolicLink() ? "symlink" : "file";
  const entry: CheckpointEntry = {
    type,
    mode: info.mode & 0o777,
    size: fields.size,
    mtimeMs: info.mtimeMs,
    ctimeMs: info.ctimeMs,
    ino: info.ino,
  };
  if (fields.sha256 !== undefined) entry.sha256 = fields.sha256;
  if (fields.linkname !== undefined) entry.linkname = fields.linkname;
  if (readAt !== undefined && Math.max(info.ctimeMs, info.mtimeMs) >= readAt - RACY_MS) entry.racy = true;
  return entry;
}

class OverBudget extends Error {}

/** The file's bytes up to EOF (it may have grown since fstat), within `budget`. */
function readAll(fd: number, size: number, budget: number): Buffer {
  const chunks: Buffer[] = [];
  let total = 0;
  let buffer = Buffer.allocUnsafe(Math.max(1, Math.min(size + 1, CHUNK_BYTES)));
  for (;;) {
    const n = readSync(fd, buffer, 0, buffer.length, null);
    if (n === 0) break;
    total += n;
    if (total > budget) throw new OverBudget();
    chunks.push(buffer.subarray(0, n));
    buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  }
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, total);
}

function copyToFile(fd: number, path: string, hash: Hash, budget: number): number {
  const out = writingTo(path, () => openSync(path, "wx", 0o600));
  try {
    const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
    let total = 0;
    for (;;) {
      const n = readSync(fd, buffer, 0, buffer.length, null);
      if (n === 0) return total;
      total += n;
      if (total > budget) throw new OverBudget();
      hash.update(buffer.subarray(0, n));
      let at = 0;
      writingTo(path, () => {
        while (at < n) at += writeSync(out, buffer, at, n - at);
      });
    }
  } finally {
    closeSync(out);
  }
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch {
    // Already gone.
  }
}

function codeOf(error: unknown): string {
  return (error as NodeJS.ErrnoException).code ?? (error as Error).message;
}
