/**
 * The change between two checkpoints as a unified diff: text files line by line, binary files and
 * files too big to diff named, mode changes as git writes them (`old mode` / `new mode`), symlinks as
 * their target text. Contents come from the run's blobs, never from the workspace.
 */
import { displayPath } from "../sandbox/copy/tree-diff.js";
import { unifiedDiff } from "../text/text-diff.js";
import { readBlob } from "./blob-store.js";
import type { CheckpointEntry, Manifest } from "./checkpoint-types.js";
import { differsInContent } from "./snapshot.js";

/** Largest file shown line by line. */
const MAX_DIFF_BYTES = 1024 * 1024;

export type FileChangeKind = "added" | "changed" | "removed";

/** One path that differs, as `runs diff --output-format json` prints it. */
export interface FileChange {
  path: string;
  kind: FileChangeKind;
  /** The entry before (changed, removed). */
  before?: EntryFacts;
  /** The entry after (added, changed). */
  after?: EntryFacts;
  /** True when either side is a file that is not text. */
  binary: boolean;
  /** The unified diff of the content ("" when only the mode or nothing textual changed). */
  diff: string;
}

/** What is shown of an entry. */
export interface EntryFacts {
  type: CheckpointEntry["type"];
  /** Octal permission bits, "644". */
  mode: string;
  size: number;
  sha256?: string;
  linkname?: string;
}

export function changesBetween(before: Manifest, after: Manifest, checkpointsDir: string): FileChange[] {
  const paths = new Set<string>();
  for (const [path, entry] of after) {
    const old = before.get(path);
    if (old === undefined || differsInContent(old, entry)) paths.add(path);
  }
  for (const path of before.keys()) if (!after.has(path)) paths.add(path);
  return [...paths].sort().map((path) => fileChange(path, before.get(path), after.get(path), checkpointsDir));
}

function fileChange(
  path: string,
  old: CheckpointEntry | undefined,
  now: CheckpointEntry | undefined,
  checkpointsDir: string,
): FileChange {
  const kind: FileChangeKind = old === undefined ? "added" : now === undefined ? "removed" : "changed";
  const change: FileChange = { path, kind, binary: false, diff: "" };
  if (old !== undefined) change.before = facts(old);
  if (now !== undefined) change.after = facts(now);
  const a = textOf(old, checkpointsDir);
  const b = textOf(now, checkpointsDir);
  if (a === "binary" || b === "binary") change.binary = true;
  else if (a === "too large" || b === "too large") change.diff = "";
  else if (old?.sha256 !== now?.sha256 || old?.linkname !== now?.linkname || old?.type !== now?.type) {
    change.diff =
      unifiedDiff(a ?? "", b ?? "", {
        before: old === undefined ? "/dev/null" : `a/${displayPath(path)}`,
        after: now === undefined ? "/dev/null" : `b/${displayPath(path)}`,
      }) ?? "";
  }
  return change;
}

/** A file's text, a symlink's target text, undefined for a directory or nothing. */
function textOf(
  entry: CheckpointEntry | undefined,
  checkpointsDir: string,
): string | "binary" | "too large" | undefined {
  if (entry === undefined || entry.type === "directory") return undefined;
  if (entry.type === "symlink") return `${displayPath(entry.linkname ?? "")}\n`;
  if (entry.size > MAX_DIFF_BYTES) return "too large";
  const content = readBlob(checkpointsDir, entry.sha256 ?? "");
  if (content.subarray(0, 8000).includes(0)) return "binary";
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(content);
  } catch {
    return "binary";
  }
}

function facts(entry: CheckpointEntry): EntryFacts {
  const out: EntryFacts = {
    type: entry.type,
    mode: entry.mode.toString(8).padStart(3, "0"),
    size: entry.size,
  };
  if (entry.sha256 !== undefined) out.sha256 = entry.sha256;
  if (entry.linkname !== undefined) out.linkname = entry.linkname;
  return out;
}

const GIT_TYPE = { file: "100", symlink: "120", directory: "040" } as const;

/** The changes as one git-style patch text. */
export function formatChanges(changes: readonly FileChange[]): string {
  let out = "";
  for (const c of changes) {
    // A name with a newline or control character is quoted: it cannot forge a line of the patch.
    const path = displayPath(c.path);
    out += `diff --harness a/${path} b/${path}\n`;
    const mode = (e: EntryFacts | undefined) =>
      e === undefined ? "" : `${GIT_TYPE[e.type]}${e.mode.padStart(3, "0")}`;
    if (c.kind === "added")
      out += `new ${c.after?.type === "directory" ? "directory" : "file"} mode ${mode(c.after)}\n`;
    else if (c.kind === "removed")
      out += `deleted ${c.before?.type === "directory" ? "directory" : "file"} mode ${mode(c.before)}\n`;
    else if (mode(c.before) !== mode(c.after))
      out += `old mode ${mode(c.before)}\nnew mode ${mode(c.after)}\n`;
    if (c.after?.type === "symlink" || c.before?.type === "symlink")
      out += "(symlink: its target text is diffed)\n";
    if (c.binary)
      out += `Binary files ${c.before ? `a/${path}` : "/dev/null"} and ${c.after ? `b/${path}` : "/dev/null"} differ\n`;
    else if (c.diff !== "") out += c.diff;
    else if ((c.after?.size ?? 0) > MAX_DIFF_BYTES || (c.before?.size ?? 0) > MAX_DIFF_BYTES)
      out += "(file too large to diff)\n";
  }
  return out;
}
