/**
 * After a bind-mode run: every file of the git surface (git-surface.ts) the run created or changed
 * is moved out of the workspace into a quarantine (git-aside-store.ts), not deleted, and one command
 * puts it all back. A warning alone did not help: the owner's next plain `git status` (or a shell
 * prompt's) ran the planted `core.fsmonitor` before anyone read it.
 *
 * What moves is what git reads to decide what to run or where to read: `config`, `config.worktree`,
 * `commondir`, `gitdir`, alternates and hooks in a git directory, and a `.git` entry that is new or
 * changed its kind (a whole nested repository, a `gitdir:` file, a symlink, a repository at the root
 * of a workspace that had none). A `.git` directory that was there before stays, and nothing git
 * writes in normal work (objects, refs, the index, logs) is on the surface, so nothing of it moves.
 *
 * Each parent directory is reached beneath the workspace (beneath.ts: opened through its parent,
 * never through a symlink), and the entry is renamed through that directory's descriptor, so a link
 * the sandbox planted at any component is never followed; the entry itself moves as it is.
 */
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { ConfigError } from "../../../errors.js";
import { sanitizeForTerminal } from "../../../terminal/sanitize.js";
import { BeneathError, type BeneathRoot, withBeneath } from "../paths/beneath.js";
import {
  type AsideItem,
  asideDirOf,
  createAsideDir,
  entryExists,
  moveEntry,
  readManifest,
  writeManifest,
} from "./git-aside-store.js";
import type { GitSurfaceChange } from "./git-surface.js";

/** A path that was not moved (or not put back), and why. */
export interface AsideFailure {
  path: string;
  how?: GitSurfaceChange["how"];
  reason: string;
}

export interface AsideResult {
  /** The quarantine's id (what `harness restore-git` takes) and directory; absent when nothing moved. */
  id?: string;
  dir?: string;
  /** Each with why it matters when its path does not say (a repository's HEAD). */
  moved: (AsideItem & { why?: string })[];
  failed: AsideFailure[];
}

/** The changes to move: only the top-most ones, since what lies under a moved directory goes with it. */
export function topMostChanges(changes: readonly GitSurfaceChange[]): GitSurfaceChange[] {
  const sorted = [...changes].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const kept: GitSurfaceChange[] = [];
  for (const change of sorted) {
    if (!kept.some((k) => change.path.startsWith(`${k.path}/`))) kept.push(change);
  }
  return kept;
}

/** The directory above root-relative `path`, reached without following a link; or why not. */
async function parentOf(
  beneath: BeneathRoot,
  path: string,
): Promise<{ dir: string | Buffer; name: string } | string> {
  const parts = path.split("/");
  const name = parts.pop() as string;
  try {
    return { dir: (await beneath.dir(parts)).at(name), name };
  } catch (error) {
    if (error instanceof BeneathError) return error.message;
    throw error;
  }
}

function why(beneath: BeneathRoot, error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  return beneath.explain(code ? `${code}: ${(error as Error).message}` : String(error));
}

/**
 * Moves each top-most change out of `workspace` (a real path) into a new quarantine. Never throws
 * for one path: a failure is listed; a quarantine that cannot be made fails every path.
 */
export async function moveGitSurfaceAside(
  workspace: string,
  changes: readonly GitSurfaceChange[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<AsideResult> {
  const todo = topMostChanges(changes);
  if (todo.length === 0) return { moved: [], failed: [] };
  let quarantine: { id: string; dir: string };
  try {
    quarantine = await createAsideDir(env);
  } catch (error) {
    const reason = `no quarantine: ${(error as Error).message}`;
    return { moved: [], failed: todo.map((c) => ({ path: c.path, how: c.how, reason })) };
  }
  const moved: (AsideItem & { why?: string })[] = [];
  const failed: AsideFailure[] = [];
  await withBeneath(workspace, async (beneath) => {
    for (const change of todo) {
      const at = await parentOf(beneath, change.path);
      if (typeof at === "string") {
        failed.push({ path: change.path, how: change.how, reason: withWhy(at, change) });
        continue;
      }
      const stored = `items/${moved.length + 1}`;
      try {
        await moveEntry(at.dir, join(quarantine.dir, stored));
        moved.push({
          path: change.path,
          how: change.how,
          stored,
          ...(change.why ? { why: change.why } : {}),
        });
        // After every move: a harness killed half-way still leaves a manifest that restores.
        await writeManifest(quarantine.dir, {
          workspace,
          items: moved.map(({ path, how, stored }) => ({ path, how, stored })),
        });
      } catch (error) {
        failed.push({ path: change.path, how: change.how, reason: withWhy(why(beneath, error), change) });
      }
    }
  }).catch((error: unknown) => {
    // The workspace itself is gone or no longer a directory: nothing left there to run.
    const reason = error instanceof BeneathError ? `the workspace ${error.message}` : String(error);
    for (const change of todo.slice(moved.length + failed.length))
      failed.push({ path: change.path, how: change.how, reason });
  });
  if (moved.length === 0) {
    await rm(quarantine.dir, { recursive: true, force: true });
    return { moved, failed };
  }
  return { ...quarantine, moved, failed };
}

function withWhy(reason: string, change: GitSurfaceChange): string {
  return change.why === undefined ? reason : `${change.why}; ${reason}`;
}

/** The lines the user sees; none when the run left the surface alone. */
export function describeGitAside(workspace: string, result: AsideResult): string[] {
  const lines: string[] = [];
  const n = result.moved.length;
  if (n > 0) {
    lines.push(
      `moved aside ${n === 1 ? "a file" : `${n} files`} the sandbox created or changed, through which git on this machine could run commands or read outside the repository:`,
      ...result.moved.map(
        (item) =>
          `  moved aside ${sanitizeForTerminal(item.path)} (${item.how}${item.why === undefined ? "" : `: ${sanitizeForTerminal(item.why)}`})`,
      ),
    );
  }
  if (result.failed.length > 0) {
    lines.push(
      "warning: the sandbox created or changed these files, through which git on this machine can run commands or read outside the repository, and harness could not move them aside:",
      ...result.failed.map(
        (f) => `  ${f.how ?? "changed"} ${sanitizeForTerminal(f.path)} (${sanitizeForTerminal(f.reason)})`,
      ),
      `  Look at them before you run git (or a shell prompt that runs git) in ${workspace}; remove what you did not expect. Even 'git -c core.fsmonitor=false' is not safe while such a file is there.`,
    );
  }
  if (result.id !== undefined && result.dir !== undefined) {
    lines.push(
      `  They are in ${result.dir} (manifest.json says which is which). To put them all back: harness restore-git ${result.id}`,
    );
  }
  return lines;
}

/**
 * Puts every item of quarantine `id` back where it was, refusing any whose place is taken (by
 * anything, an empty directory or a dangling link included) or whose directory is gone or is a
 * symlink now. What was put back leaves the manifest; an emptied quarantine is removed.
 */
export async function restoreGitAside(
  id: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ workspace: string; dir: string; restored: string[]; refused: AsideFailure[] }> {
  const dir = asideDirOf(id, env);
  const manifest = await readManifest(dir);
  const restored: string[] = [];
  const refused: AsideFailure[] = [];
  const left: AsideItem[] = [];
  await withBeneath(manifest.workspace, async (beneath) => {
    await beneath.dir([]).catch((error: unknown) => {
      if (error instanceof BeneathError)
        throw new ConfigError(`the workspace ${manifest.workspace} ${error.message}`);
      throw error;
    });
    for (const item of manifest.items) {
      const refuse = (reason: string) => {
        refused.push({ path: item.path, reason });
        left.push(item);
      };
      if (!/^items\/\d+$/.test(item.stored)) {
        refuse(`not a quarantine entry: ${item.stored}`);
        continue;
      }
      const at = await parentOf(beneath, item.path);
      if (typeof at === "string") refuse(at);
      else if (await entryExists(at.dir)) refuse("something is there now; move it away first");
      else {
        try {
          await moveEntry(join(dir, item.stored), at.dir);
          restored.push(item.path);
        } catch (error) {
          refuse(why(beneath, error));
        }
      }
    }
  });
  if (left.length === 0) await rm(dir, { recursive: true, force: true });
  else await writeManifest(dir, { workspace: manifest.workspace, items: left });
  return { workspace: manifest.workspace, dir, restored, refused };
}
