/**
 * Walking the host workspace for copy mode with lstat only: a symlink is recorded as a symlink and
 * never followed (a link in the workspace can point anywhere on the host), sockets, fifos and
 * devices are left out, and nothing under an ignored path is visited. Every directory is reached
 * through beneath.ts, so one swapped for a symlink during the walk is not followed either. The walk
 * stops as soon as it has found more entries than the copy takes (`--copy-max-files`).
 *
 * Names are read as bytes (byte-names.ts). One that is not UTF-8, or a symlink target that is not,
 * cannot be copied exactly (a tar archive names files in UTF-8 here and in the engine): it is
 * listed in `notUtf8`, and planWorkspaceCopy refuses the whole copy for it.
 */
import { createHash } from "node:crypto";
import type { Stats } from "node:fs";
import { constants } from "node:fs";
import { type FileHandle, lstat, open, opendir, readlink } from "node:fs/promises";
import { ConfigError } from "../../errors.js";
import { type BeneathDir, type BeneathRoot, withBeneath } from "../host/paths/beneath.js";
import { fsPath, hasRawBytes, nameFromBytes } from "../host/paths/byte-names.js";
import { SANDBOX_DEFAULTS } from "../sandbox-request.js";
import type { IgnoreMatcher } from "./ignore-rules.js";
import type { Tree, TreeEntry } from "./tree-diff.js";

/** One file, directory or symlink of the workspace. */
export interface ScannedEntry {
  /** Workspace-relative path with `/` separators, e.g. "src/main.py". */
  path: string;
  type: "file" | "directory" | "symlink";
  /** Permission bits only (0o777); setuid, setgid and sticky are never copied. */
  mode: number;
  /** Bytes of content (0 for directories and symlinks). */
  size: number;
  /** Target of a symlink, as stored in the link. */
  linkname?: string | undefined;
  /** Modification time, kept in the copy so timestamp-based builds behave. */
  mtime: Date;
}

/** A path that could not be copied, and why; it is also left out of the comparison afterwards. */
export interface SkippedPath {
  path: string;
  reason: string;
}

export interface WorkspaceScan {
  /** Parents before children, names sorted. */
  entries: ScannedEntry[];
  skipped: SkippedPath[];
  /** Sum of file sizes: what the copy limit is checked against. */
  totalBytes: number;
  /** Paths whose name or symlink target is not UTF-8 (also in `skipped`): copy mode refuses these. */
  notUtf8: string[];
}

export const NOT_UTF8_REASON =
  "its name or link target is not valid UTF-8; copy mode cannot carry it exactly";

/** What a file that is neither a regular file, a directory nor a symlink is, for a message. */
export function specialKind(info: Stats): string {
  if (info.isSocket()) return "socket";
  if (info.isFIFO()) return "fifo";
  if (info.isCharacterDevice()) return "character device";
  if (info.isBlockDevice()) return "block device";
  return "unknown file type";
}

/** A name of a listed directory: an entry to copy, or a special file left out. */
type Listed =
  | { name: string; entry: ScannedEntry }
  | { name: string; path: string; special: string }
  | { name: string; path: string; notUtf8: true };

/** Thrown as soon as the walk has found more than `maxEntries` entries to copy. */
function tooMany(root: string, maxEntries: number): ConfigError {
  return new ConfigError(
    `workspace '${root}' holds more than ${maxEntries} files, directories and symlinks to copy: raise --copy-max-files or leave paths out with .harnessignore`,
  );
}

export async function scanWorkspace(
  root: string,
  ignored: IgnoreMatcher,
  maxEntries: number = SANDBOX_DEFAULTS.copyMaxFiles,
): Promise<WorkspaceScan> {
  const scan: WorkspaceScan = { entries: [], skipped: [], totalBytes: 0, notUtf8: [] };
  const refuse = (path: string) => {
    scan.notUtf8.push(path);
    scan.skipped.push({ path, reason: NOT_UTF8_REASON });
  };
  // Entries found, including those of directories listed but not yet walked.
  let found = 0;
  /**
   * The entries of one directory worth copying, sorted by name. Read one name at a time (opendir),
   * so a directory holding millions of names is given up on once the count passes the limit; only
   * what the scan keeps is held for each name, not its whole lstat.
   */
  const list = async (dir: BeneathDir, rel: string) => {
    const kept: Listed[] = [];
    const path0 = typeof dir.path === "string" ? fsPath(dir.path) : dir.path;
    for await (const dirent of await opendir(path0, { encoding: "buffer" as BufferEncoding })) {
      const name = nameFromBytes(dirent.name as unknown as Buffer);
      const path = rel === "" ? name : `${rel}/${name}`;
      const info = await lstat(dir.at(name)).catch(() => undefined);
      // Gone since it was listed (the user is editing): nothing to copy.
      if (!info) continue;
      if (ignored(path, info.isDirectory())) continue;
      if (hasRawBytes(name)) {
        kept.push({ name, path, notUtf8: true });
        continue;
      }
      const type = info.isSymbolicLink()
        ? "symlink"
        : info.isDirectory()
          ? "directory"
          : info.isFile()
            ? "file"
            : undefined;
      if (type === undefined) {
        kept.push({ name, path, special: specialKind(info) });
        continue;
      }
      found++;
      if (found > maxEntries) throw tooMany(root, maxEntries);
      const size = type === "file" ? info.size : 0;
      kept.push({ name, entry: { path, type, mode: info.mode & 0o777, size, mtime: info.mtime } });
    }
    return kept.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  };
  // Parents first: `dir` stays open while its subdirectories are walked (see BeneathRoot).
  const walk = async (beneath: BeneathRoot, parts: string[]): Promise<void> => {
    const rel = parts.join("/");
    let dir: BeneathDir;
    let listed: Listed[];
    try {
      dir = await beneath.dir(parts);
      listed = await list(dir, rel);
    } catch (error) {
      if (error instanceof ConfigError) throw error;
      scan.skipped.push({
        path: rel,
        reason: `unreadable directory (${(error as NodeJS.ErrnoException).code})`,
      });
      return;
    }
    for (const item of listed) {
      if ("special" in item) {
        scan.skipped.push({ path: item.path, reason: item.special });
        continue;
      }
      if ("notUtf8" in item) {
        refuse(item.path);
        continue;
      }
      const { name, entry } = item;
      if (entry.type === "symlink") {
        const target = await readlink(dir.at(name), { encoding: "buffer" }).catch((error: unknown) => {
          // Replaced or removed since the lstat: left out, and out of the diff.
          scan.skipped.push({
            path: entry.path,
            reason: `changed while read (${(error as NodeJS.ErrnoException).code})`,
          });
          return undefined;
        });
        if (target === undefined) continue;
        const linkname = nameFromBytes(target);
        if (hasRawBytes(linkname)) {
          refuse(entry.path);
          continue;
        }
        entry.linkname = linkname;
        scan.entries.push(entry);
      } else if (entry.type === "directory") {
        scan.entries.push(entry);
        await walk(beneath, [...parts, name]);
      } else {
        scan.entries.push(entry);
        scan.totalBytes += entry.size;
      }
    }
  };
  await withBeneath(root, (beneath) => walk(beneath, []));
  return scan;
}

/**
 * Opens the workspace file at root-relative `path` for reading without following a symlink at any
 * component (ELOOP) or blocking on a fifo that replaced it since the scan; anything but a regular
 * file is refused.
 */
export async function openRegularFile(beneath: BeneathRoot, path: string): Promise<FileHandle> {
  const parts = path.split("/");
  const name = parts.pop() as string;
  const dir = await beneath.dir(parts);
  const handle = await open(dir.at(name), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  if (!(await handle.stat()).isFile()) {
    await handle.close();
    throw Object.assign(new Error(`${path} is no longer a regular file`), { code: "ENOTFILE" });
  }
  return handle;
}

async function hashFile(beneath: BeneathRoot, path: string): Promise<string> {
  const handle = await openRegularFile(beneath, path);
  try {
    const hash = createHash("sha256");
    for await (const chunk of handle.createReadStream({ autoClose: false })) hash.update(chunk);
    return hash.digest("hex");
  } finally {
    await handle.close();
  }
}

/**
 * The workspace as a comparable tree: the scan plus a content hash of every file. A file that
 * cannot be read now is added to `skipped`, so it is never reported as deleted.
 */
export async function hostTree(root: string, scan: WorkspaceScan): Promise<Tree> {
  const tree: Tree = new Map();
  await withBeneath(root, async (beneath) => {
    for (const e of scan.entries) {
      const entry: TreeEntry = { type: e.type, mode: e.mode, size: e.size };
      if (e.linkname !== undefined) entry.linkname = e.linkname;
      if (e.type === "file") {
        try {
          entry.sha256 = await hashFile(beneath, e.path);
        } catch (error) {
          scan.skipped.push({
            path: e.path,
            reason: `unreadable (${(error as NodeJS.ErrnoException).code})`,
          });
          continue;
        }
      }
      tree.set(e.path, entry);
    }
  });
  return tree;
}
