/**
 * Bind mode: workspace files that programs on the host run without being asked — git's hooks and
 * config (any `git status`, including the one a shell prompt runs, executes `core.fsmonitor`),
 * direnv's `.envrc` on `cd`, editor tasks on folder open — are mounted read-only over the workspace
 * mount, so a task cannot plant code there for the host to run later.
 *
 * Every check uses lstat and nothing is mounted through a symlink: Docker follows a symlinked bind
 * source, so a link planted in the workspace would put any host path into the container.
 */
import { constants } from "node:fs";
import { lstat, mkdir, open } from "node:fs/promises";
import { isAbsolute, join, posix } from "node:path";
import type Docker from "dockerode";
import { ConfigError, SandboxError } from "../../../errors.js";
import type { ProtectOptions } from "../../sandbox-request.js";
import { parseUserIds } from "../../sandbox-user.js";
import { BeneathError, withBeneath } from "../paths/beneath.js";
import { fsPath, hasRawBytes, readdirLossless } from "../paths/byte-names.js";
import { type GitConfigPath, gitConfigWorkspacePaths } from "./git-config-paths.js";

/**
 * Protected when they exist (besides `.git`, which is handled on its own). `.env` because harness
 * itself loads `.env` from the current directory, which is the workspace by default: a task could set
 * ANTHROPIC_BASE_URL there and have the next run send the API key elsewhere. `.devcontainer` and
 * `.devcontainer.json` because `--devcontainer` builds and runs what they say.
 */
export const DEFAULT_PROTECTED_PATHS: readonly string[] = [
  ".env",
  ".envrc",
  ".vscode",
  ".devcontainer",
  ".devcontainer.json",
];

/** One extra bind mount of a workspace path onto itself in the container. */
export interface ProtectedMount {
  /** Workspace-relative, `/`-separated, no `.` or `..` segments. */
  path: string;
  /**
   * True for a read-only mount. False for `.git` itself and for every directory above a protected
   * path (`.github` for `.github/workflows`): a read-write mount of the same directory that pins it,
   * because a mount point cannot be renamed or removed. Without it a task could `mv .git elsewhere`
   * or `mv .github elsewhere` (the read-only mounts inside move along) and create a new one.
   */
  readOnly: boolean;
  /** Inode of the host path when it was checked; the mount must show the same one. */
  ino: number;
}

/** How `--protect` and `--no-protect` reach the sandbox (defined with the request, in the contract). */
export type { ProtectOptions };

/** Checks a `--protect` path and returns it workspace-relative with `/` separators. */
export function normalizeProtectPath(given: string): string {
  const path = posix.normalize(given.replaceAll("\\", "/")).replace(/\/+$/, "");
  if (given.trim() === "" || isAbsolute(given) || path === "." || path === ".." || path.startsWith("../")) {
    throw new ConfigError(
      `--protect takes a path inside the workspace, like .github/workflows; got '${given}'`,
    );
  }
  return path;
}

type Kind = "missing" | "symlink" | "file" | "directory" | "other";

interface Found {
  kind: Kind;
  ino: number;
  /** The first component that is missing or a symlink, else the path. */
  at: string;
  /** The directories above the path, outermost first, as the same walk found them. */
  parents: { path: string; ino: number }[];
}

/** lstat of every component, so a symlinked parent is caught as well as a symlinked leaf. */
async function kindOf(workspace: string, path: string): Promise<Found> {
  const parts = path.split("/");
  const parents: Found["parents"] = [];
  for (let i = 1; i <= parts.length; i++) {
    const at = parts.slice(0, i).join("/");
    const info = await lstat(fsPath(join(workspace, at))).catch(() => undefined);
    if (!info) return { kind: "missing", ino: 0, at, parents };
    if (info.isSymbolicLink()) return { kind: "symlink", ino: 0, at, parents };
    if (i === parts.length) {
      const kind = info.isDirectory() ? "directory" : info.isFile() ? "file" : "other";
      return { kind, ino: info.ino, at, parents };
    }
    if (!info.isDirectory()) return { kind: "missing", ino: 0, at, parents };
    parents.push({ path: at, ino: info.ino });
  }
  return { kind: "missing", ino: 0, at: path, parents };
}

/**
 * Creates an empty `.git/hooks` or `.git/config` (or a path `.git/config` names) that a task could
 * otherwise create and fill. Every directory on the way is opened without following a symlink
 * (beneath.ts), so a parent swapped for a link by a process still running in the workspace's
 * container cannot make harness (often root) create or chown a file elsewhere on the host.
 */
async function createEmpty(workspace: string, path: string, type: "directory" | "file", owner: string) {
  const parts = path.split("/");
  const name = parts.pop() as string;
  const { uid, gid } = parseUserIds(owner);
  const asRoot = process.getuid?.() === 0;
  await withBeneath(workspace, async (beneath) => {
    const dir = await beneath.dir(parts).catch((error: unknown) => {
      if (!(error instanceof BeneathError)) throw error;
      throw new SandboxError(`'${path}' in ${workspace} cannot be created: ${error.message}; not opening`);
    });
    if (type === "directory") {
      await mkdir(dir.at(name), { mode: 0o755 });
      if (asRoot) await (await beneath.dir([...parts, name])).chown(uid, gid);
      return;
    }
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
    const handle = await open(dir.at(name), flags, 0o644);
    try {
      if (asRoot) await handle.chown(uid, gid);
    } finally {
      await handle.close();
    }
  });
}

/**
 * Inside a git directory, what git reads to decide what to run or where to read, when it exists:
 * `commondir` (where `config` and hooks really come from), `config.worktree`, a worktree's `gitdir`,
 * and the object stores named in `objects/info/alternates`. git-surface.ts watches the ones a task
 * could create where none existed.
 */
const GIT_DIR_EXTRAS = [
  "commondir",
  "config.worktree",
  "gitdir",
  "objects/info/alternates",
  "objects/info/http-alternates",
];

/** What `.git/config` names in the work tree (git-config-paths.ts), read without following a link. */
export async function configNamedPaths(ws: string): Promise<GitConfigPath[]> {
  const handle = await open(
    join(ws, ".git/config"),
    constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
  ).catch(() => undefined);
  if (!handle) return [];
  try {
    if (!(await handle.stat()).isFile()) return [];
    return gitConfigWorkspacePaths(await handle.readFile("utf8"), ws);
  } finally {
    await handle.close();
  }
}

/**
 * Submodule and worktree git directories under `.git` (`modules/a`, `modules/a/modules/b`,
 * `worktrees/w`). Names are read as bytes: one that is not UTF-8 cannot be a mount's source (the
 * engine's API is JSON, which carries only Unicode), so it is named in a note instead of skipped
 * unseen; git-surface.ts still moves aside what a run changes in it.
 */
async function innerGitDirs(ws: string, note: (line: string) => void): Promise<string[]> {
  const found: string[] = [];
  const walk = async (dir: string, depth: number): Promise<void> => {
    const names = (await readdirLossless(join(ws, dir)).catch(() => [])).map((e) => e.name);
    for (const name of names.sort()) {
      const path = `${dir}/${name}`;
      if ((await kindOf(ws, path)).kind !== "directory") continue;
      if (hasRawBytes(name)) {
        note(
          `not protecting ${path}: its name is not UTF-8, which a mount cannot name; what the task changes in it is moved aside at the end`,
        );
        continue;
      }
      if ((await kindOf(ws, `${path}/HEAD`)).kind === "file") found.push(path);
      if (depth < 6) await walk(path, depth + 1);
    }
  };
  for (const top of [".git/modules", ".git/worktrees"]) {
    if ((await kindOf(ws, top)).kind === "directory") await walk(top, 0);
  }
  return found;
}

/**
 * The mounts for `.git`: pin the directory, then its config and hooks read-only (created when
 * missing), the same for every submodule and worktree git directory under it (when they exist),
 * and the extras above. Every directory between `.git` and a mounted path is pinned too.
 */
async function gitMounts(ws: string, owner: string, note: (line: string) => void): Promise<ProtectedMount[]> {
  const git = await kindOf(ws, ".git");
  if (git.kind === "missing") return [];
  // A worktree's .git: a "gitdir: …" file.
  if (git.kind === "file") return [{ path: ".git", readOnly: true, ino: git.ino }];
  if (git.kind !== "directory") {
    note(
      `not protecting .git: it is a ${git.kind}; git hooks and config the task writes will run on the host`,
    );
    return [];
  }
  const mounts: ProtectedMount[] = [{ path: ".git", readOnly: false, ino: git.ino }];
  const add = (path: string, found: Found) => {
    for (const parent of found.parents) {
      if (parent.path !== ".git" && !mounts.some((m) => m.path === parent.path))
        mounts.push({ ...parent, readOnly: false });
    }
    mounts.push({ path, readOnly: true, ino: found.ino });
  };
  for (const [path, type] of [
    [".git/config", "file"],
    [".git/hooks", "directory"],
  ] as const) {
    let found = await kindOf(ws, path);
    if (found.kind === "missing") {
      await createEmpty(ws, path, type, owner);
      note(`created an empty ${path} so it can be mounted read-only (the task could otherwise create it)`);
      found = await kindOf(ws, path);
    }
    if (found.kind === type) add(path, found);
    else if (found.kind === "symlink")
      note(`not protecting ${path}: it is a symlink, and a symlink is never mounted`);
    else note(`not protecting ${path}: it is a ${found.kind}, not a ${type}`);
  }
  for (const named of await configNamedPaths(ws)) {
    let found = await kindOf(ws, named.path);
    if (found.kind === "missing" && found.at === named.path) {
      await createEmpty(ws, named.path, named.type, owner);
      note(
        `created an empty ${named.path} (named by ${named.key} in .git/config) so it can be mounted read-only`,
      );
      found = await kindOf(ws, named.path);
    }
    if (found.kind === named.type) add(named.path, found);
    else
      note(
        `not protecting ${named.path} (named by ${named.key} in .git/config): ${found.at} is ${found.kind === "symlink" ? "a symlink" : `not a ${named.type}`}; what the task writes there runs on the host`,
      );
  }
  const inner = await innerGitDirs(ws, note);
  const candidates = [
    ...GIT_DIR_EXTRAS.map((name) => `.git/${name}`),
    ...inner.flatMap((dir) => ["config", "hooks", ...GIT_DIR_EXTRAS].map((name) => `${dir}/${name}`)),
  ];
  for (const path of candidates) {
    const found = await kindOf(ws, path);
    if (found.kind === "file" || found.kind === "directory") add(path, found);
    else if (found.kind === "symlink")
      note(`not protecting ${path}: ${found.at} is a symlink, and a symlink is never mounted`);
  }
  return mounts;
}

/**
 * Works out the protective mounts for a workspace (a real path, from `resolveWorkspace`). `owner`
 * ("uid:gid") owns anything created; `note` gets one line per path skipped or created, for the user.
 */
export async function planProtectedMounts(
  workspace: string,
  owner: string,
  options: ProtectOptions,
  note: (line: string) => void,
): Promise<ProtectedMount[]> {
  if (options.disabled) return [];
  const byPath = new Map<string, ProtectedMount>();
  for (const mount of await gitMounts(workspace, owner, note)) byPath.set(mount.path, mount);
  const extra = (options.extraPaths ?? []).map(normalizeProtectPath);
  for (const path of new Set([...DEFAULT_PROTECTED_PATHS, ...extra])) {
    const found = await kindOf(workspace, path);
    const asked = extra.includes(path);
    if (found.kind === "missing") {
      if (asked) note(`not protecting ${path}: it does not exist in the workspace`);
    } else if (found.kind === "symlink") {
      note(`not protecting ${path}: ${found.at} is a symlink, and a symlink is never mounted`);
    } else if (found.kind === "other") {
      note(`not protecting ${path}: it is not a file or directory`);
    } else {
      byPath.set(path, { path, readOnly: true, ino: found.ino });
      // Pinned like .git; a parent that is protected itself keeps its read-only mount.
      for (const parent of found.parents) {
        if (!byPath.has(parent.path)) byPath.set(parent.path, { ...parent, readOnly: false });
      }
    }
  }
  // A parent sorts before its children, so it is mounted first (Docker also orders by depth).
  return [...byPath.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** The Docker mounts, to go after the workspace mount (Docker orders them by depth). */
export function protectedBindMounts(
  workspace: string,
  workdir: string,
  mounts: readonly ProtectedMount[],
): Docker.MountSettings[] {
  return mounts.map((m) => ({
    Type: "bind",
    Source: join(workspace, m.path),
    Target: posix.join(workdir, m.path),
    ReadOnly: m.readOnly,
  }));
}

/**
 * Run after a container started (created, or started or restarted after a recovery, since Docker
 * resolves bind sources again at every start): the paths must still be what was checked. Between
 * the check and the mount, a process left running in the workspace's previous container could have
 * swapped a path for a symlink; that container is gone by now, so what is found here is what was
 * mounted. `when` ends the error message.
 */
export async function verifyProtectedMounts(
  workspace: string,
  mounts: readonly ProtectedMount[],
  when = "while the sandbox was being created",
) {
  for (const m of mounts) {
    const found = await kindOf(workspace, m.path);
    if (found.ino !== m.ino || found.kind === "symlink" || found.kind === "missing") {
      throw new SandboxError(`'${m.path}' in ${workspace} changed ${when}`);
    }
  }
}
