/**
 * What copy mode does not write back even when the strict extractor would allow it: files the host
 * runs unasked, and paths the user changed on the host while the sandbox worked on its copy.
 */
import {
  configNamedPaths,
  DEFAULT_PROTECTED_PATHS,
  normalizeProtectPath,
  type ProtectOptions,
} from "../host/git/protected-paths.js";
import type { Refusal } from "../host/paths/strict-paths.js";
import { gitRuleRefusals } from "./git-refusals.js";
import type { Change } from "./tree-diff.js";
import type { WorkspaceCopyPlan } from "./workspace-archive.js";
import { type ScannedEntry, scanWorkspace, type WorkspaceScan } from "./workspace-scan.js";

/**
 * The git surface (git-surface.ts) inside any git directory: `commondir` names the directory git
 * reads `config` from, so it is as dangerous as `config`; a worktree's `gitdir` and the object stores
 * in `alternates` make git read outside the repository.
 */
const GIT_COMMAND_FILES =
  /(^|\/)\.git\/((modules|worktrees)\/.+\/)?(config|config\.worktree|commondir|gitdir|hooks(\/.*)?|objects\/info\/(http-)?alternates)$/;

/**
 * A reason to refuse a change at a workspace-relative path, or undefined. `type` is what the change
 * leaves there ("file", "directory", "symlink"); undefined for a deletion.
 */
export type PathPolicy = (path: string, type?: string) => string | undefined;

/**
 * Paths never written back, added, changed or deleted: the ones bind mode mounts read-only
 * (protected-paths.ts), because programs on the host run them unasked. git runs commands named in
 * its config (core.fsmonitor, hooksPath, filters) and its hooks on the next git call, as the user.
 * A `.git` itself is refused too: replaced by a symlink or a `gitdir:` file, it would point git at a
 * config the task wrote elsewhere. Above a protected path only a directory is applied: a symlink there
 * would put another directory's files in its place. `--no-protect` lifts all of this, as in bind mode.
 */
export function protectedPathRefusal(protect: ProtectOptions = {}): PathPolicy {
  if (protect.disabled) return () => undefined;
  const paths = [...DEFAULT_PROTECTED_PATHS, ...(protect.extraPaths ?? []).map(normalizeProtectPath)];
  return (path, type) => {
    if (path === ".git" || path.endsWith("/.git")) {
      return "a repository's .git decides which config and hooks git runs on the host; not applied";
    }
    if (GIT_COMMAND_FILES.test(path)) return "git config and hooks can run commands on the host; not applied";
    const hit = paths.find((p) => path === p || path.startsWith(`${p}/`));
    if (hit) return `${hit} is protected (host programs run it); not applied`;
    const below = paths.find((p) => p.startsWith(`${path}/`));
    if (below && type !== undefined && type !== "directory") {
      return `${path} holds the protected ${below}: only a directory is applied there`;
    }
    return undefined;
  };
}

/**
 * The policy for applying `changes` to the workspace `plan.root`: protectedPathRefusal, with the
 * paths the host's .git/config names in the work tree too (a hooks directory, an included config),
 * and git's rule over the whole tree (git-refusals.ts). `host` is a scan of the workspace made now;
 * without it, one is made. `--no-protect` lifts all of it.
 */
export async function workspaceRefusal(
  plan: Pick<WorkspaceCopyPlan, "root" | "ignored" | "maxEntries">,
  protect: ProtectOptions = {},
  changes: readonly Change[] = [],
  host?: readonly ScannedEntry[],
): Promise<PathPolicy> {
  if (protect.disabled) return () => undefined;
  const named = (await configNamedPaths(plan.root)).map((p) => p.path);
  const paths = protectedPathRefusal({ ...protect, extraPaths: [...(protect.extraPaths ?? []), ...named] });
  const entries = host ?? (await scanWorkspace(plan.root, plan.ignored, plan.maxEntries)).entries;
  const git = await gitRuleRefusals(plan.root, entries, changes, plan.ignored);
  return (path, type) => paths(path, type) ?? git.get(path);
}

/** What `policy` refuses among `changes`, one line each, for the review before the apply. */
export function refusalsOf(policy: PathPolicy, changes: readonly Change[]): Refusal[] {
  return changes.flatMap((c) => {
    const reason = policy(c.path, c.kind === "D" ? undefined : c.after?.type);
    return reason === undefined ? [] : [{ path: c.path, reason }];
  });
}

function sameEntry(a: ScannedEntry, b: ScannedEntry): boolean {
  return (
    a.type === b.type &&
    a.mode === b.mode &&
    a.size === b.size &&
    a.linkname === b.linkname &&
    (a.type === "directory" || a.mtime.getTime() === b.mtime.getTime())
  );
}

/**
 * Compares the workspace as it was copied in with the workspace now. `existedAtCopy` tells a
 * deletion by the sandbox from a file the user created meanwhile (never deleted); `changedOnHost`
 * finds paths the user edited meanwhile (never overwritten). Directory mtimes are not compared: a
 * new file inside changes them.
 */
export function hostChangesSince(atCopy: WorkspaceScan, now: WorkspaceScan) {
  const before = new Map(atCopy.entries.map((e) => [e.path, e]));
  const after = new Map(now.entries.map((e) => [e.path, e]));
  return {
    existedAtCopy: (path: string) => before.has(path),
    changedOnHost: (path: string) => {
      const a = before.get(path);
      const b = after.get(path);
      return a === undefined || b === undefined ? a !== b : !sameEntry(a, b);
    },
  };
}
