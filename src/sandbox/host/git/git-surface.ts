/**
 * Bind mode: the git surface (git-rule.ts) of the workspace on disk, fingerprinted so that a run's
 * changes to it are noticed. Read-only mounts (protected-paths.ts) cover what exists when the
 * sandbox opens; what cannot be mounted (a file the task creates, like `.git/commondir`, a
 * repository it plants anywhere in the work tree, `git init --bare docs`, or makes of the
 * workspace's root) is found here by comparing the surface before and after a run.
 *
 * The walk lists every directory of the workspace; in a git directory it records `objects/`,
 * `refs/` and `logs/` without entering them (but `objects/info/`). Only lstat, readdir and
 * O_NOFOLLOW reads: nothing here follows a symlink the sandbox made. Names are read as bytes and
 * kept lossless (byte-names.ts): a repository under `$'d\xff'` is seen too.
 */
import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { lstat, open, readlink } from "node:fs/promises";
import { join } from "node:path";
import { fsPath, nameFromBytes, readdirLossless } from "../paths/byte-names.js";
import {
  childPath,
  type GitSurface,
  gitSurfaceOf,
  headIsValid,
  NOT_ENTERED_IN_GIT_DIR,
  type RuleEntry,
  type SurfaceView,
} from "./git-rule.js";

export type { GitSurface, GitSurfaceChange } from "./git-rule.js";
export { gitSurfaceChanges } from "./git-rule.js";

/** Largest file hashed in full; a larger one is fingerprinted by size and mtime. */
const MAX_HASHED_BYTES = 4 * 1024 ** 2;
/** O_NONBLOCK: a fifo swapped in since the lstat must not block the host. */
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

async function fingerprint(root: string, path: string): Promise<string | undefined> {
  const full = fsPath(join(root, path));
  const info = await lstat(full).catch(() => undefined);
  if (!info) return undefined;
  if (info.isSymbolicLink()) {
    const target = await readlink(full, { encoding: "buffer" }).catch(() => undefined);
    return `symlink:${target === undefined ? "?" : nameFromBytes(target)}`;
  }
  if (info.isDirectory()) return "dir";
  if (!info.isFile()) return "other";
  if (info.size > MAX_HASHED_BYTES) return `large:${info.size}:${info.mtimeMs}:${info.mode}`;
  const handle = await open(full, READ_FLAGS).catch(() => undefined);
  if (!handle) return "unreadable";
  try {
    if (!(await handle.stat()).isFile()) return "other";
    const hash = createHash("sha256").update(await handle.readFile());
    return `file:${hash.digest("hex")}:${(info.mode & 0o7777).toString(8)}`;
  } finally {
    await handle.close();
  }
}

/** The first `max` bytes of a regular file, never through a link; undefined otherwise. */
async function firstBytes(root: string, path: string, max: number): Promise<Buffer | undefined> {
  const handle = await open(fsPath(join(root, path)), READ_FLAGS).catch(() => undefined);
  if (!handle) return undefined;
  try {
    if (!(await handle.stat()).isFile()) return undefined;
    const buffer = Buffer.alloc(max);
    const { bytesRead } = await handle.read(buffer, 0, max, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** What a directory listing says of an entry, without following it. */
function kindOf(entry: {
  isDirectory(): boolean;
  isFile(): boolean;
  isSymbolicLink(): boolean;
}): RuleEntry["type"] {
  if (entry.isSymbolicLink()) return "symlink";
  if (entry.isDirectory()) return "directory";
  return entry.isFile() ? "file" : "other";
}

/** Names the rule looks for anywhere; everything else is kept only inside a git directory. */
const RULE_NAMES = new Set([".git", "HEAD", "refs", "commondir"]);

/**
 * The entries of the workspace (a real path) the rule needs, by one walk that lists every directory
 * and never enters a link: RULE_NAMES anywhere, and everything in a git directory.
 */
async function listWorkspace(root: string): Promise<Map<string, RuleEntry>> {
  const entries = new Map<string, RuleEntry>();
  const walk = async (dir: string, inGitDir: boolean, only?: string): Promise<void> => {
    const listed = (await readdirLossless(join(root, dir)).catch(() => [])).filter(
      ({ name }) => only === undefined || name === only,
    );
    const here = new Map<string, RuleEntry>();
    for (const { name, entry } of listed) {
      if (RULE_NAMES.has(name) || inGitDir)
        here.set(name, await entryAt(root, childPath(dir, name), kindOf(entry)));
    }
    const gitDir = dir === ".git" || dir.endsWith("/.git") || (await looksLikeGitDir(root, dir, here));
    for (const { name, entry } of listed) {
      // A directory the rule has just found to be a git directory: what it holds counts.
      if (gitDir && !here.has(name)) here.set(name, await entryAt(root, childPath(dir, name), kindOf(entry)));
    }
    for (const [name, seen] of here) entries.set(childPath(dir, name), seen);
    for (const { name, entry } of listed) {
      if (!entry.isDirectory()) continue;
      if (gitDir && name === "objects") await walk(childPath(dir, name), true, "info");
      else if (!gitDir || !NOT_ENTERED_IN_GIT_DIR.has(name))
        await walk(childPath(dir, name), inGitDir || gitDir);
    }
  };
  await walk("", false);
  return entries;
}

async function entryAt(root: string, path: string, type: RuleEntry["type"]): Promise<RuleEntry> {
  if (type !== "symlink") return { type };
  const target = await readlink(fsPath(join(root, path)), { encoding: "buffer" }).catch(() => undefined);
  return { type, linkname: target === undefined ? "" : nameFromBytes(target) };
}

/** What is at `path` now, lstat only. */
async function lstatEntry(root: string, path: string): Promise<RuleEntry | undefined> {
  const info = await lstat(fsPath(join(root, path))).catch(() => undefined);
  return info === undefined ? undefined : entryAt(root, path, kindOf(info));
}

/** Every path below `dir`, by a walk that never enters a link. */
async function pathsBelow(root: string, dir: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (at: string, depth: number): Promise<void> => {
    for (const { name, entry } of await readdirLossless(join(root, at)).catch(() => [])) {
      found.push(childPath(at, name));
      if (entry.isDirectory() && depth < 12) await walk(childPath(at, name), depth + 1);
    }
  };
  await walk(dir, 0);
  return found;
}

/** Whether `dir` is a git directory by git's rule, from its listing (and HEAD's bytes). */
async function looksLikeGitDir(root: string, dir: string, here: Map<string, RuleEntry>): Promise<boolean> {
  const head = here.get("HEAD");
  if (head === undefined || (!here.has("refs") && !here.has("commondir"))) return false;
  const bytes = head.type === "file" ? await firstBytes(root, childPath(dir, "HEAD"), 255) : undefined;
  return headIsValid(head, bytes);
}

/** The workspace on disk as the rule reads it. */
export async function workspaceView(root: string): Promise<SurfaceView> {
  return {
    entries: await listWorkspace(root),
    entry: (path) => lstatEntry(root, path),
    below: (dir) => pathsBelow(root, dir),
    print: (path) => fingerprint(root, path),
    bytes: (path, max) => firstBytes(root, path, max),
  };
}

/** The surface of a whole workspace (a real path). */
export async function scanGitSurface(root: string): Promise<GitSurface> {
  return gitSurfaceOf(await workspaceView(root), root);
}
