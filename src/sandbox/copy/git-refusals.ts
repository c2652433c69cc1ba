/**
 * Copy mode's apply and git's rule (host/git/git-rule.ts): a change is not applied when it touches
 * the git surface of the host tree or of the tree the apply would leave, so no directory becomes a
 * repository and no repository's config, hooks or object stores change, whatever the directory is
 * called: `git init --bare docs`, a bare repository made of the workspace's root, a `HEAD` and a
 * `commondir` anywhere. Of a directory that would become a repository, its `HEAD`, `refs` and
 * `commondir` are refused; objects, refs below it and the rest are plain files without them.
 *
 * The tree after the apply is taken as the host's plus everything the sandbox added or changed
 * (what it deleted counts as still there), and a file the sandbox wrote is taken as whatever makes
 * it most dangerous (any `HEAD` is valid): the rule then finds at least every repository git would.
 * Names the rule looks for that the scan left out (ignored paths) are looked up on the host.
 */
import { lstat } from "node:fs/promises";
import {
  childPath,
  describeDir,
  GIT_DIRECTORY,
  gitSurfaceOf,
  type RuleEntry,
  treeView,
} from "../host/git/git-rule.js";
import { type BeneathRoot, withBeneath } from "../host/paths/beneath.js";
import type { IgnoreMatcher } from "./ignore-rules.js";
import { type Change, displayPath } from "./tree-diff.js";
import { openRegularFile, type ScannedEntry } from "./workspace-scan.js";

type HostEntry = RuleEntry & { mode?: number };

/** The first `max` bytes of a host file, never through a link; undefined when it is not one. */
async function hostBytes(beneath: BeneathRoot, path: string, max: number): Promise<Buffer | undefined> {
  const handle = await openRegularFile(beneath, path).catch(() => undefined);
  if (handle === undefined) return undefined;
  try {
    const buffer = Buffer.alloc(max);
    const { bytesRead } = await handle.read(buffer, 0, max, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** What is at root-relative `path` on the host, without following a link; undefined when nothing. */
async function hostKind(beneath: BeneathRoot, path: string): Promise<HostEntry | undefined> {
  const parts = path.split("/");
  const name = parts.pop() as string;
  const dir = await beneath.dir(parts).catch(() => undefined);
  const info = dir === undefined ? undefined : await lstat(dir.at(name)).catch(() => undefined);
  if (info === undefined) return undefined;
  if (info.isSymbolicLink()) return { type: "symlink" };
  return { type: info.isDirectory() ? "directory" : info.isFile() ? "file" : "other" };
}

/** Every directory above the changed paths ("" for the root). */
function directoriesAbove(changes: readonly Change[]): Set<string> {
  const dirs = new Set<string>([""]);
  for (const { path } of changes) {
    for (let at = path.lastIndexOf("/"); at > 0; at = path.lastIndexOf("/", at - 1))
      dirs.add(path.slice(0, at));
  }
  return dirs;
}

/**
 * Path → reason for each change git's rule refuses. `host` is the host workspace as scanned now,
 * `root` its real path.
 */
export async function gitRuleRefusals(
  root: string,
  host: readonly ScannedEntry[],
  changes: readonly Change[],
  ignored: IgnoreMatcher,
): Promise<Map<string, string>> {
  const before = new Map<string, HostEntry>(
    host.map((e) => [e.path, { type: e.type, linkname: e.linkname, mode: e.mode }]),
  );
  return withBeneath(root, async (beneath) => {
    // Names the rule looks for that the scan left out (an ignored HEAD or refs/) are still there.
    for (const dir of directoriesAbove(changes)) {
      for (const name of ["HEAD", "refs", "commondir", ".git"]) {
        const path = childPath(dir, name);
        if (before.has(path) || !(ignored(path, false) || ignored(path, true))) continue;
        const found = await hostKind(beneath, path);
        if (found !== undefined) before.set(path, found);
      }
    }
    const after = new Map<string, HostEntry & { sha256?: string | undefined }>(before);
    const bySandbox = new Set<string>();
    for (const change of changes) {
      if (change.kind === "D" || change.after === undefined) continue;
      after.set(change.path, change.after);
      bySandbox.add(change.path);
    }
    const read = (path: string, max: number) => hostBytes(beneath, path, max);
    const surfaceBefore = await gitSurfaceOf(treeView(before, read), root);
    // What the sandbox wrote is not read: a HEAD counts as valid, a config names nothing (it is
    // refused itself, so what it names never counts).
    const surfaceAfter = await gitSurfaceOf(
      treeView(after, (path, max) => (bySandbox.has(path) ? Promise.resolve(undefined) : read(path, max))),
      root,
    );
    const refusals = new Map<string, string>();
    for (const [path, print] of surfaceAfter) {
      if (print !== GIT_DIRECTORY || surfaceBefore.has(path)) continue;
      const dir = path.slice(0, -"HEAD".length).replace(/\/$/, "");
      for (const name of ["HEAD", "refs", "commondir"]) {
        refusals.set(
          childPath(dir, name),
          `git on the host would take ${dir === "" ? describeDir(dir) : displayPath(dir)} for a repository; not applied`,
        );
      }
    }
    for (const path of [...surfaceBefore.keys(), ...surfaceAfter.keys()]) {
      if (refusals.has(path) || surfaceBefore.get(path) === GIT_DIRECTORY) continue;
      refusals.set(path, "git on the host reads it to decide what to run or where to read; not applied");
    }
    const changed = new Set(changes.map((c) => c.path));
    for (const path of refusals.keys()) if (!changed.has(path)) refusals.delete(path);
    // What lies below a refused directory goes with it.
    const dirs = [...refusals.keys()].filter((p) => after.get(p)?.type === "directory");
    for (const change of changes) {
      const above = dirs.find((d) => change.path.startsWith(`${d}/`));
      if (above !== undefined && !refusals.has(change.path))
        refusals.set(change.path, `inside ${displayPath(above)}, which was refused`);
    }
    return refusals;
  });
}
