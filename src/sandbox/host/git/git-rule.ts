/**
 * Git's own rule for what it takes for a repository, whatever the directory is called (git's
 * setup.c): a directory is a git directory when its `HEAD` is valid (`validate_headref`) and it has
 * `refs/`, or a `commondir` naming where `refs/` is (`is_git_directory`). Discovery tries, in the
 * directory git runs in and then in each parent, `DIR/.git` (a directory, a symlink to one, or a
 * `gitdir:` file) and then `DIR` itself as a bare repository, so such a directory anywhere in a
 * workspace, the workspace's root included, is a repository for every git command run in it or
 * below it; `safe.directory` does not help, since the owner is the same user.
 *
 * `objects/` is not asked for: `GIT_OBJECT_DIRECTORY` in the owner's environment stands for it. A
 * `commondir` counts whatever it names, which may lie outside the workspace. What cannot be read
 * (copy mode does not keep every file's bytes) counts as valid. So the rule here finds at least
 * every directory git would take, and a few it would not.
 *
 * On this rule rests one surface, for every tree harness compares (bind mode's workspace before and
 * after a run, copy mode's host and sandbox trees, a checkpoint and its run's first): every `.git`
 * entry; in each git directory, what git reads to decide what to run or where to read; the `HEAD`
 * of each git directory not called `.git` (the file that makes it one, whose print says only that
 * git takes the directory for a repository); and what configs there name in the work tree.
 */
import { gitConfigWorkspacePaths } from "./git-config-paths.js";

/** Workspace-relative path → fingerprint ("dir", "file:…", "symlink:<target>", "other", GIT_DIRECTORY). */
export type GitSurface = Map<string, string>;

export interface GitSurfaceChange {
  path: string;
  how: "created" | "changed";
  /** Why it matters, when the path alone does not say (a repository's HEAD). */
  why?: string;
}

/** The print of a git directory's `HEAD`: that git takes the directory for a repository, not which branch it names. */
export const GIT_DIRECTORY = "git-directory";

/** What the rule sees of one path. */
export interface RuleEntry {
  /** "file", "directory", "symlink", or another kind. */
  type: string;
  /** A symlink's target. */
  linkname?: string | undefined;
}

/** A tree as the rule reads it: bind mode's workspace on disk, copy mode's trees, a checkpoint. */
export interface SurfaceView {
  /**
   * Paths (workspace-relative, `/`-separated) in any order: at least every `.git`, `HEAD`, `refs` and
   * `commondir`, and everything in a git directory (below its `objects/`, `refs/` and `logs/` only
   * `objects/info/`); it may hold the whole tree.
   */
  readonly entries: ReadonlyMap<string, RuleEntry>;
  /** Any path's entry (one a config names), without following a link; undefined when nothing is there. */
  entry(path: string): Promise<RuleEntry | undefined>;
  /** Every path below directory `dir` (a hooks directory a config names). */
  below(dir: string): Promise<string[]>;
  /** The fingerprint of a path, to compare two surfaces; undefined when it is gone. */
  print(path: string): Promise<string | undefined>;
  /** A regular file's first `max` bytes, never through a link; undefined when not known. */
  bytes(path: string, max: number): Promise<Buffer | undefined>;
}

/** What git reads of HEAD: 255 bytes (validate_headref). */
const HEAD_BYTES = 255;
/** Most bytes of a config read for the paths it names. */
const CONFIG_BYTES = 1024 * 1024;
/** git stops following includes at depth 10 (MAX_INCLUDE_DEPTH). */
const MAX_INCLUDE_DEPTH = 10;

/**
 * Inside a git directory (`inner` relative to it), what git reads to decide what to run or where to
 * read: `config` and `config.worktree` (core.fsmonitor, hooksPath, pager, filters, aliases,
 * includes), `commondir` (where `config` and hooks really come from), `gitdir` (a worktree's way
 * back), everything under `hooks/`, and the object stores of `objects/info/alternates`.
 */
export function onGitDirSurface(inner: string): boolean {
  return SURFACE_NAMES.test(inner);
}

const SURFACE_NAMES =
  /^(config|config\.worktree|commondir|gitdir|hooks(\/.*)?|objects\/info\/(http-)?alternates)$/;

/**
 * Inside a `.git` directory, where git keeps submodules' and worktrees' git directories: the same
 * names under `modules/…/` and `worktrees/…/` count even when the directory there is not (yet) a
 * git directory of its own.
 */
function onDotGitSurface(inner: string): boolean {
  return (
    SURFACE_NAMES.test(inner) ||
    /^(modules|worktrees)\/.+\/(config|config\.worktree|commondir|gitdir|hooks(\/.*)?|objects\/info\/(http-)?alternates)$/.test(
      inner,
    )
  );
}

/**
 * Directories directly in a git directory that hold many files and nothing of the surface but
 * `objects/info/`: a walk records them and does not enter them.
 */
export const NOT_ENTERED_IN_GIT_DIR = new Set(["objects", "refs", "logs", "lfs", "rr-cache"]);

/** git's validate_headref: a symlink to `refs/…`, or a file holding `ref: refs/…` or an object id. */
export function headIsValid(entry: RuleEntry | undefined, bytes: Buffer | undefined): boolean {
  if (entry === undefined) return false;
  if (entry.type === "symlink") return (entry.linkname ?? "").startsWith("refs/");
  if (entry.type !== "file") return false;
  if (bytes === undefined) return true;
  const text = bytes.subarray(0, HEAD_BYTES).toString("latin1");
  return /^ref:\s*refs\//.test(text) || /^([0-9a-f]{64}|[0-9a-f]{40})/i.test(text);
}

export function childPath(dir: string, name: string): string {
  return dir === "" ? name : `${dir}/${name}`;
}

function parentPath(path: string): string {
  const at = path.lastIndexOf("/");
  return at < 0 ? "" : path.slice(0, at);
}

function baseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

/** For messages: "the workspace's root" for "". */
export function describeDir(dir: string): string {
  return dir === "" ? "the workspace's root" : dir;
}

/**
 * Every git directory of the tree: each `.git` directory, and each directory git takes for a
 * repository by its rule ("found"), the root included.
 */
export async function gitDirectories(view: SurfaceView): Promise<Map<string, "dotgit" | "found">> {
  const dirs = new Map<string, "dotgit" | "found">();
  for (const [path, entry] of view.entries) {
    const name = baseName(path);
    if (name === ".git" && entry.type === "directory") dirs.set(path, "dotgit");
    if (name !== "HEAD") continue;
    const dir = parentPath(path);
    if (baseName(dir) === ".git" && dir !== "") continue;
    if (!view.entries.has(childPath(dir, "refs")) && !view.entries.has(childPath(dir, "commondir"))) continue;
    const bytes = entry.type === "file" ? await view.bytes(path, HEAD_BYTES) : undefined;
    if (headIsValid(entry, bytes)) dirs.set(dir, "found");
  }
  return dirs;
}

/** The git directory `path` lies in (the nearest), or undefined. */
function enclosingGitDir(dirs: ReadonlyMap<string, unknown>, path: string): string | undefined {
  for (let dir = parentPath(path); ; dir = parentPath(dir)) {
    if (dirs.has(dir)) return dir;
    if (dir === "") return undefined;
  }
}

/**
 * The surface of a tree (see the top of this file). `workspace` is the host path the tree is (or
 * will be) at, for configs that name a work-tree path absolutely.
 */
export async function gitSurfaceOf(view: SurfaceView, workspace: string): Promise<GitSurface> {
  const dirs = await gitDirectories(view);
  const surface: GitSurface = new Map();
  const record = async (path: string) => {
    const print = await view.print(path);
    if (print !== undefined) surface.set(path, print);
  };
  for (const path of view.entries.keys()) {
    if (baseName(path) === ".git") {
      await record(path);
      continue;
    }
    const dir = enclosingGitDir(dirs, path);
    if (dir === undefined) continue;
    const inner = dir === "" ? path : path.slice(dir.length + 1);
    if (dirs.get(dir) === "dotgit" ? onDotGitSurface(inner) : onGitDirSurface(inner)) await record(path);
  }
  for (const [dir, kind] of dirs) {
    if (kind === "found") surface.set(childPath(dir, "HEAD"), GIT_DIRECTORY);
  }
  await addConfigNamedPaths(view, workspace, dirs, record);
  return surface;
}

/**
 * `core.hooksPath` and `include.path` / `includeIf.*.path` of every config in a git directory, and
 * of the files they include, when they name a work-tree path: a hook planted there runs, an
 * included config counts as the repository's. What such a path holds joins the surface.
 */
async function addConfigNamedPaths(
  view: SurfaceView,
  workspace: string,
  dirs: ReadonlyMap<string, "dotgit" | "found">,
  record: (path: string) => Promise<void>,
): Promise<void> {
  const queue: { path: string; workTree: string; depth: number }[] = [];
  for (const [dir, kind] of dirs) {
    const workTree = kind === "dotgit" ? parentPath(dir) : dir;
    for (const name of ["config", "config.worktree"]) {
      const path = childPath(dir, name);
      if (view.entries.get(path)?.type === "file") queue.push({ path, workTree, depth: 0 });
    }
  }
  const read = new Set<string>();
  for (let item = queue.shift(); item !== undefined; item = queue.shift()) {
    if (read.has(item.path) || item.depth > MAX_INCLUDE_DEPTH) continue;
    read.add(item.path);
    const bytes = await view.bytes(item.path, CONFIG_BYTES);
    if (bytes === undefined) continue;
    const named = gitConfigWorkspacePaths(bytes.toString("utf8"), workspace, {
      configDir: parentPath(item.path),
      workTree: item.workTree,
    });
    for (const { path, type } of named) {
      const entry = view.entries.get(path) ?? (await view.entry(path));
      if (entry === undefined) continue;
      await record(path);
      if (type === "file" && entry.type === "file")
        queue.push({ path, workTree: item.workTree, depth: item.depth + 1 });
      if (type === "directory" && entry.type === "directory") {
        for (const inside of await view.below(path)) await record(inside);
      }
    }
  }
}

/** What changed on the surface between two trees; removals are left out (they cannot run anything). */
export function gitSurfaceChanges(before: GitSurface, after: GitSurface): GitSurfaceChange[] {
  const changes: GitSurfaceChange[] = [];
  for (const [path, print] of after) {
    const was = before.get(path);
    if (was === print) continue;
    const change: GitSurfaceChange = { path, how: was === undefined ? "created" : "changed" };
    if (print === GIT_DIRECTORY)
      change.why = `git would take ${describeDir(parentPath(path))} for a repository`;
    changes.push(change);
  }
  return changes.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** A `SurfaceView` of an in-memory tree whose entries carry their content hash (copy mode, checkpoints). */
export function treeView(
  entries: ReadonlyMap<string, RuleEntry & { mode?: number; sha256?: string | undefined }>,
  bytes: (path: string, max: number) => Promise<Buffer | undefined>,
): SurfaceView {
  return {
    entries,
    bytes,
    entry: async (path) => entries.get(path),
    below: async (dir) => [...entries.keys()].filter((path) => path.startsWith(`${dir}/`)),
    print: async (path) => {
      const entry = entries.get(path);
      if (entry === undefined) return undefined;
      if (entry.type === "directory") return "dir";
      if (entry.type === "symlink") return `symlink:${entry.linkname ?? ""}`;
      if (entry.type === "file") return `file:${entry.sha256 ?? "?"}:${(entry.mode ?? 0).toString(8)}`;
      return "other";
    },
  };
}
