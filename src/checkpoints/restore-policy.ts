/**
 * What a restore (`runs restore`, `run --fork`, `replay --from`) writes of a checkpoint, and what it
 * leaves out. A checkpoint taken during a run holds what the sandbox wrote, also what the run's end
 * then moved aside (bind mode) or copy mode's apply refused: a restore writes that tree on the host
 * as an apply does, so it takes the same rules, by comparing the checkpoint with the run's first one
 * (the workspace as the run found it), as a bind-mode run's end compares the workspace with its start:
 *
 * - git's surface (sandbox/host/git/git-rule.ts): whatever the sandbox created there is left out,
 *   whole (a new `.git`, a directory's `HEAD` that made it a repository, a `commondir`, hooks, what a
 *   config includes); a file it changed is written as the run found it (a repository's config);
 * - the paths host programs run unasked (`.envrc`, `.vscode`, `.devcontainer`, …, protected-paths.ts):
 *   the same;
 * - `.env` files the sandbox wrote are restored, and named so that the caller records their content
 *   as sandbox-written (src/cli/dotenv/dotenv-records.ts): harness does not load them, wherever they are.
 *
 * What the workspace already had when the run began is restored as it was.
 */

import { gitSurfaceChanges, gitSurfaceOf, treeView } from "../sandbox/host/git/git-rule.js";
import { DEFAULT_PROTECTED_PATHS } from "../sandbox/host/git/protected-paths.js";
import { readBlob } from "./blob-store.js";
import type { CheckpointEntry, Manifest } from "./checkpoint-types.js";

/** A path a restore does not write as the checkpoint has it (with everything below it), and why. */
export interface Withheld {
  path: string;
  reason: string;
  /**
   * The file or symlink the run's first checkpoint had there, written instead (a repository's
   * config as it was before the run changed it); absent: nothing is written there.
   */
  previous?: CheckpointEntry;
}

export interface RestorePlan {
  /** Left out, top-most paths only. */
  withheld: Withheld[];
  /** `.env` files that are restored though the sandbox wrote them: their paths and contents' SHA-256. */
  sandboxEnvFiles: { path: string; sha256: string }[];
}

/** `.env` is restored (and recorded as sandbox-written); the others are left out. */
const LEFT_OUT_PROTECTED = DEFAULT_PROTECTED_PATHS.filter((path) => path !== ".env");

function sameEntry(a: CheckpointEntry | undefined, b: CheckpointEntry): boolean {
  return (
    a !== undefined &&
    a.type === b.type &&
    a.mode === b.mode &&
    a.sha256 === b.sha256 &&
    a.linkname === b.linkname
  );
}

function isBelow(path: string, dir: string): boolean {
  return path.startsWith(`${dir}/`);
}

/**
 * What to leave out of `manifest` (checkpoint N) restored at `target`, given `baseline` (the run's
 * first checkpoint) and the run's blobs in `checkpointsDir`.
 */
export async function planRestore(
  baseline: Manifest,
  manifest: Manifest,
  checkpointsDir: string,
  target: string,
): Promise<RestorePlan> {
  const bytesOf = (tree: Manifest) => async (path: string, max: number) => {
    const sha256 = tree.get(path)?.sha256;
    if (sha256 === undefined) return undefined;
    try {
      return readBlob(checkpointsDir, sha256).subarray(0, max);
    } catch {
      return undefined;
    }
  };
  const before = await gitSurfaceOf(treeView(baseline, bytesOf(baseline)), target);
  const after = await gitSurfaceOf(treeView(manifest, bytesOf(manifest)), target);
  const candidates: Withheld[] = gitSurfaceChanges(before, after).map((change) => ({
    path: change.path,
    reason:
      change.why === undefined
        ? `${change.how} during the run; git on the host reads it to decide what to run or where to read`
        : `${change.how} during the run: ${change.why}`,
  }));
  for (const [path, entry] of manifest) {
    const hit = LEFT_OUT_PROTECTED.find((p) => path === p || isBelow(path, p));
    if (hit !== undefined && !sameEntry(baseline.get(path), entry))
      candidates.push({ path, reason: `written during the run; programs on the host run ${hit} unasked` });
  }
  // A file or link that was there before (a config the run changed) is written as it was.
  for (const candidate of candidates) {
    const was = baseline.get(candidate.path);
    const now = manifest.get(candidate.path);
    if (was !== undefined && was.type !== "directory" && now !== undefined && now.type !== "directory")
      candidate.previous = was;
  }
  candidates.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const withheld: Withheld[] = [];
  for (const candidate of candidates) {
    if (!withheld.some((w) => w.path === candidate.path || isBelow(candidate.path, w.path)))
      withheld.push(candidate);
  }
  const left = (path: string) => withheld.some((w) => w.path === path || isBelow(path, w.path));
  const sandboxEnvFiles: RestorePlan["sandboxEnvFiles"] = [];
  for (const [path, entry] of manifest) {
    const name = path.slice(path.lastIndexOf("/") + 1);
    if (name !== ".env" || entry.type !== "file" || entry.sha256 === undefined || left(path)) continue;
    if (!sameEntry(baseline.get(path), entry)) sandboxEnvFiles.push({ path, sha256: entry.sha256 });
  }
  return { withheld, sandboxEnvFiles };
}
