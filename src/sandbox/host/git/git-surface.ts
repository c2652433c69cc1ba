/**
 * The files through which a workspace can make the host's git run a command or read outside the
 * repository, fingerprinted so that a run's changes to them are noticed. Read-only mounts
 * (protected-paths.ts) cover what exists when the sandbox opens; what cannot be mounted (a file the
 * task creates, like `.git/commondir`, or a repository it plants anywhere in the work tree and adds
 * to the index as a gitlink, which `git status` then enters) is found here by comparing the surface
 * before and after a run.
 *
 * In a git directory (`.git`, `.git/modules/NAME`, `.git/worktrees/NAME`, or a nested repository's):
 * - `config`, `config.worktree`: core.fsmonitor, core.hooksPath, core.pager, filters, aliases, includes;
 * - `commondir`: the directory git reads `config` (and hooks) from instead;
 * - `gitdir` (a worktree's way back), `objects/info/alternates` and `http-alternates`: object stores
 *   anywhere on the host;
 * - everything under `hooks/`.
 * Anywhere in the work tree: every `.git` entry itself (a directory, a `gitdir:` file, a symlink).
 *
 * Only lstat, readdir and O_NOFOLLOW reads: nothing here follows a symlink the sandbox made. Names
 * are read as bytes and kept lossless (byte-names.ts): a repository under `$'d\xff'` is seen too.
 */
import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { lstat, open, readlink } from "node:fs/promises";
import { join } from "node:path";
import { fsPath, nameFromBytes, readdirLossless } from "../paths/byte-names.js";

/** Workspace-relative path → fingerprint ("dir", "file:<sha256>:<mode>", "symlink:<target>", "other"). */
export type GitSurface = Map<string, string>;

export interface GitSurfaceChange {
  path: string;
  how: "created" | "changed";
}

/** Names inside a git directory that decide what git runs or where it reads. */
const GIT_DIR_FILES = new Set(["config", "config.worktree", "commondir", "gitdir"]);
const ALTERNATES = new Set(["alternates", "http-alternates"]);
/** Git directories that hold nothing of the surface but can hold very many files. */
const SKIPPED_IN_GIT_DIR = new Set(["refs", "logs", "lfs", "rr-cache"]);
/** Largest file hashed in full; a larger one is fingerprinted by size and mtime. */
const MAX_HASHED_BYTES = 4 * 1024 ** 2;

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
  // O_NONBLOCK: a fifo swapped in since the lstat must not block the host.
  const handle = await open(full, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(
    () => undefined,
  );
  if (!handle) return "unreadable";
  try {
    if (!(await handle.stat()).isFile()) return "other";
    const hash = createHash("sha256").update(await handle.readFile());
    return `file:${hash.digest("hex")}:${(info.mode & 0o7777).toString(8)}`;
  } finally {
    await handle.close();
  }
}

async function entries(root: string, dir: string): Promise<{ name: string; isDirectory(): boolean }[]> {
  const found = await readdirLossless(join(root, dir)).catch(() => []);
  return found.map(({ name, entry }) => ({ name, isDirectory: () => entry.isDirectory() }));
}

/** Everything of the surface inside one git directory, including its modules and worktrees. */
async function scanGitDir(root: string, gitDir: string, into: GitSurface): Promise<void> {
  const walk = async (dir: string, depth: number): Promise<void> => {
    for (const entry of await entries(root, dir)) {
      const path = `${dir}/${entry.name}`;
      const inHooks = path
        .slice(gitDir.length + 1)
        .split("/")
        .includes("hooks");
      if (
        inHooks ||
        GIT_DIR_FILES.has(entry.name) ||
        (ALTERNATES.has(entry.name) && dir.endsWith("/objects/info"))
      ) {
        const print = await fingerprint(root, path);
        if (print !== undefined) into.set(path, print);
      }
      if (!entry.isDirectory() || depth > 12 || SKIPPED_IN_GIT_DIR.has(entry.name)) continue;
      // Object stores are huge; only their info/ (alternates) matters.
      if (entry.name === "objects") {
        await walk(`${path}/info`, depth + 1);
        continue;
      }
      if (dir.endsWith("/objects")) continue;
      await walk(path, depth + 1);
    }
  };
  await walk(gitDir, 0);
}

/**
 * The surface of a whole workspace (a real path): every `.git` in the work tree, and the surface
 * inside each one that is a directory. Symlinked directories are recorded, never entered.
 */
export async function scanGitSurface(root: string): Promise<GitSurface> {
  const surface: GitSurface = new Map();
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await entries(root, dir)) {
      const path = dir === "" ? entry.name : `${dir}/${entry.name}`;
      if (entry.name === ".git") {
        const print = await fingerprint(root, path);
        if (print === undefined) continue;
        surface.set(path, print);
        if (print === "dir") await scanGitDir(root, path, surface);
        continue;
      }
      if (entry.isDirectory()) await walk(path);
    }
  };
  await walk("");
  return surface;
}

/** What a run created or changed on the surface; removals are left out (they cannot run anything). */
export function gitSurfaceChanges(before: GitSurface, after: GitSurface): GitSurfaceChange[] {
  const changes: GitSurfaceChange[] = [];
  for (const [path, print] of after) {
    const was = before.get(path);
    if (was === undefined) changes.push({ path, how: "created" });
    else if (was !== print) changes.push({ path, how: "changed" });
  }
  return changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}
