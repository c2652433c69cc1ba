/**
 * The strict extract in two steps, for copy mode's all-or-nothing apply: `stageExtract` reads the
 * archive with every check strict-extract.ts makes and writes each file's content into a staging
 * directory (never into the workspace); `placeStaged` then puts the staged entries in place, in
 * archive order, with the same checks on the way (parents, symlinks resolved against the tree).
 * Placing is idempotent: a file already moved in is not in the staging directory any more, and a
 * directory or symlink is simply placed again, so an interrupted placing can be run again.
 */
import { createHash, randomBytes } from "node:crypto";
import { constants } from "node:fs";
import {
  copyFile,
  type FileHandle,
  lchown,
  lstat,
  open,
  rename,
  rmdir,
  symlink,
  unlink,
} from "node:fs/promises";
import type { Readable } from "node:stream";
import { SandboxError } from "../../../errors.js";
import type { BeneathDir, BeneathRoot } from "../paths/beneath.js";
import { checkParents, resolveSymlink } from "../paths/strict-paths.js";
import { isOutOfSpace, placeDirectory, replaceWith, writeTemp } from "./extract-entry-placement.js";
import { resolveLinksAgain } from "./recheck-written-links.js";
import { type EntryHandler, readEntries } from "./strict-extract.js";
import type { ExtractResult, ExtractState, StrictExtractOptions } from "./strict-extract-types.js";
import { checkEntry, entryType } from "./write-extract-entry.js";

/** One entry to put in place: a file's content is `staged` in the staging directory. */
export type StagedOp =
  | { kind: "directory"; path: string; mode: number }
  | { kind: "symlink"; path: string; target: string }
  | { kind: "file"; path: string; staged: string; sha256: string };

export interface StagedExtract {
  ops: StagedOp[];
  /** Refusals and notes of the reading; `written` stays empty until placed. */
  result: ExtractResult;
  /** Paths refused while reading: nothing inside them is placed. */
  refusedPaths: string[];
}

/** Reads `source` into `staging` (a directory on the workspace's filesystem); nothing in `root` changes. */
export async function stageExtract(
  source: Readable,
  options: StrictExtractOptions,
  beneath: BeneathRoot,
  staging: BeneathDir,
  /** Called after each file is staged, with how many are. */
  onStaged?: (files: number) => void,
): Promise<StagedExtract> {
  const ops: StagedOp[] = [];
  let files = 0;
  const stage: EntryHandler = async (entry, parts, wanted, refusedPaths, state, opts, result) => {
    const h = entry.header;
    const refused = checkEntry(h, parts, wanted, refusedPaths, state, opts);
    if (refused) return refused;
    const path = parts.join("/");
    const type = entryType(h);
    if (((h.mode ?? 0) & 0o7000) !== 0)
      result.notes.push({ path, reason: "setuid/setgid/sticky bits stripped" });
    const mode = (h.mode ?? 0o644) & 0o777;
    if (type === "directory") ops.push({ kind: "directory", path, mode });
    else if (type === "symlink") ops.push({ kind: "symlink", path, target: h.linkname ?? "" });
    else {
      const staged = `f${ops.length}`;
      state.total += h.size ?? 0;
      let hash: string;
      try {
        const sha256 = await writeTemp(entry, staging, staged, mode);
        hash = sha256;
        if (wanted && wanted.sha256 !== sha256) {
          await unlink(staging.at(staged));
          return "content changed in the sandbox since it was reviewed";
        }
        if (opts.chownTo) await lchown(staging.at(staged), opts.chownTo.uid, opts.chownTo.gid);
      } catch (error) {
        // All or nothing: a staging the disk cannot hold stops the apply before anything is placed,
        // rather than applying the rest without this file.
        if (isOutOfSpace(error))
          throw new SandboxError(
            `the changes could not be staged in ${opts.root}: ${path} could not be written (${(error as NodeJS.ErrnoException).code}); nothing was applied`,
          );
        return `could not write: ${(error as Error).message}`;
      }
      ops.push({ kind: "file", path, staged, sha256: hash });
      onStaged?.(++files);
    }
    return undefined;
  };
  const state: ExtractState = { beneath, total: 0, links: [] };
  const { result, refusedPaths } = await readEntries(source, options, state, stage);
  return { ops, result, refusedPaths };
}

export interface PlaceOptions {
  chownTo?: { uid: number; gid: number } | undefined;
  /** Symlinks already in the workspace to resolve again at the end (strict-extract's `recheckLinks`). */
  recheckLinks: readonly string[];
  /**
   * Finishing a placing another process began: a file no longer staged was moved in by it; a staged
   * one is hashed again and taken only as a regular file with the staged content (this process
   * cannot know what touched the staging directory since).
   */
  resuming?: boolean;
  /** Called after each entry is placed, with how many are. */
  onPlaced?: (count: number) => void;
}

/**
 * Puts the staged entries in place under `beneath`'s root, adding to `result`. A file's staged
 * content is renamed over whatever is at its path (an empty directory is removed first, as
 * strict-extract does); on another filesystem (a mount inside the workspace) it is copied beside
 * its path and renamed.
 */
export async function placeStaged(
  beneath: BeneathRoot,
  staging: BeneathDir,
  ops: readonly StagedOp[],
  refusedPaths: string[],
  options: PlaceOptions,
  result: ExtractResult,
): Promise<void> {
  const links: { path: string; target: string }[] = [];
  let placed = 0;
  for (const op of ops) {
    const refused = await placeOne(beneath, staging, op, refusedPaths, options, links).catch(
      (error: unknown) => `could not write: ${beneath.explain((error as Error).message)}`,
    );
    if (refused) {
      result.refused.push({ path: op.path, reason: refused });
      refusedPaths.push(op.path);
    } else result.written.push(op.path);
    options.onPlaced?.(++placed);
  }
  if (links.length > 0) await resolveLinksAgain(beneath, links, options.recheckLinks, result);
}

async function placeOne(
  beneath: BeneathRoot,
  staging: BeneathDir,
  op: StagedOp,
  refusedPaths: readonly string[],
  options: PlaceOptions,
  links: { path: string; target: string }[],
): Promise<string | undefined> {
  const inside = refusedPaths.find((d) => op.path.startsWith(`${d}/`));
  if (inside) return `inside ${inside}, which was refused`;
  const parts = op.path.split("/");
  const name = parts.at(-1) as string;
  if (op.kind === "file" && options.resuming) {
    // Moved in by the run that was interrupted (its staged copy is what rename took).
    if (!(await lstat(staging.at(op.staged)).catch(() => undefined))) return undefined;
    if (!(await stagedIntact(staging, op.staged, op.sha256)))
      return "its staged content changed since it was staged";
  }
  let parent = await checkParents(beneath, parts, true);
  if (typeof parent === "string") return parent;
  if (op.kind === "symlink") {
    const resolved = await resolveSymlink(beneath, op.path, op.target);
    if (resolved.refusal) return resolved.refusal;
    parent = await checkParents(beneath, parts, true);
    if (typeof parent === "string") return parent;
  }
  if (op.kind === "directory") {
    await placeDirectory(beneath, parent, parts, op.mode, options.chownTo);
    return undefined;
  }
  if (op.kind === "symlink") {
    const temp = tempName(name);
    await symlink(op.target, parent.at(temp));
    if (options.chownTo) await lchown(parent.at(temp), options.chownTo.uid, options.chownTo.gid);
    await replaceWith(parent, temp, name);
    links.push({ path: op.path, target: op.target });
    return undefined;
  }
  const existing = await lstat(parent.at(name)).catch(() => undefined);
  if (existing?.isDirectory()) await rmdir(parent.at(name));
  try {
    await rename(staging.at(op.staged), parent.at(name));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EXDEV") throw error;
    const temp = tempName(name);
    // copyFile gives the copy the staged file's mode bits; the owner is set again.
    await copyFile(staging.at(op.staged), parent.at(temp), constants.COPYFILE_EXCL);
    if (options.chownTo) await lchown(parent.at(temp), options.chownTo.uid, options.chownTo.gid);
    await replaceWith(parent, temp, name);
    await unlink(staging.at(op.staged));
  }
  return undefined;
}

/** True when the staged file is a regular file, with one link, holding the content staged. */
async function stagedIntact(staging: BeneathDir, name: string, sha256: string): Promise<boolean> {
  let handle: FileHandle;
  try {
    handle = await open(staging.at(name), constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return false;
  }
  try {
    const info = await handle.stat();
    if (!info.isFile() || info.nlink !== 1) return false;
    const hash = createHash("sha256");
    for await (const chunk of handle.createReadStream({ autoClose: false })) hash.update(chunk as Buffer);
    return hash.digest("hex") === sha256;
  } finally {
    await handle.close();
  }
}

function tempName(name: string): string {
  return `.${name.slice(0, 64)}.harness-${randomBytes(6).toString("hex")}`;
}
