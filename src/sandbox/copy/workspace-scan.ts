/**
 * Walking the host workspace for copy mode with lstat only: a symlink is recorded as a symlink and
 * never followed (a link in the workspace can point anywhere on the host), sockets, fifos and
 * devices are left out, and nothing under an ignored path is visited. Every directory is reached
 * through beneath.ts, so one swapped for a symlink during the walk is not followed either.
 *
 * Names are read as bytes (byte-names.ts). One that is not UTF-8, or a symlink target that is not,
 * cannot be copied exactly (a tar archive names files in UTF-8 here and in the engine): it is
 * listed in `notUtf8`, and planWorkspaceCopy refuses the whole copy for it.
 */
import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { type FileHandle, lstat, open, readlink } from "node:fs/promises";
import { type BeneathDir, type BeneathRoot, withBeneath } from "../host/paths/beneath.js";
import { hasRawBytes, nameFromBytes, readdirLossless } from "../host/paths/byte-names.js";
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

function specialKind(info: import("node:fs").Stats): string {
  if (info.isSocket()) return "socket";
  if (info.isFIFO()) return "fifo";
  if (info.isCharacterDevice()) return "character device";
  if (info.isBlockDevice()) return "block device";
  return "unknown file type";
}

export async function scanWorkspace(root: string, ignored: IgnoreMatcher): Promise<WorkspaceScan> {
  const scan: WorkspaceScan = { entries: [], skipped: [], totalBytes: 0, notUtf8: [] };
  const refuse = (path: string) => {
    scan.notUtf8.push(path);
    scan.skipped.push({ path, reason: NOT_UTF8_REASON });
  };
  // Parents first: `dir` stays open while its subdirectories are walked (see BeneathRoot).
  const walk = async (beneath: BeneathRoot, parts: string[]): Promise<void> => {
    const rel = parts.join("/");
    let dir: BeneathDir;
    let names: string[];
    try {
      dir = await beneath.dir(parts);
      names = (await readdirLossless(dir.path)).map((e) => e.name).sort();
    } catch (error) {
      scan.skipped.push({
        path: rel,
        reason: `unreadable directory (${(error as NodeJS.ErrnoException).code})`,
      });
      return;
    }
    for (const name of names) {
      const path = rel === "" ? name : `${rel}/${name}`;
      const info = await lstat(dir.at(name)).catch(() => undefined);
      // Gone since readdir (the user is editing): nothing to copy.
      if (!info) continue;
      if (ignored(path, info.isDirectory())) continue;
      if (hasRawBytes(name)) {
        refuse(path);
        continue;
      }
      const common = { path, mode: info.mode & 0o777, mtime: info.mtime };
      if (info.isSymbolicLink()) {
        const target = await readlink(dir.at(name), { encoding: "buffer" }).catch((error: unknown) => {
          // Replaced or removed since the lstat: left out, and out of the diff.
          scan.skipped.push({
            path,
            reason: `changed while read (${(error as NodeJS.ErrnoException).code})`,
          });
          return undefined;
        });
        if (target === undefined) continue;
        const linkname = nameFromBytes(target);
        if (hasRawBytes(linkname)) {
          refuse(path);
          continue;
        }
        scan.entries.push({ ...common, type: "symlink", size: 0, linkname });
      } else if (info.isDirectory()) {
        scan.entries.push({ ...common, type: "directory", size: 0 });
        await walk(beneath, [...parts, name]);
      } else if (info.isFile()) {
        scan.entries.push({ ...common, type: "file", size: info.size });
        scan.totalBytes += info.size;
      } else {
        scan.skipped.push({ path, reason: specialKind(info) });
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
