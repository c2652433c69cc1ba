/**
 * After a bind-mode run: removes the setuid and setgid bits from every regular file in the workspace.
 * A set-id file the task left there would run as the workspace owner (or its group) for any host
 * user who ran it. The seccomp profile (seccomp-profile.ts) already refuses the mode change inside
 * the sandbox; this sweep catches what got through anyway: a runtime that applies the profile
 * differently (gVisor's runsc releases before 2026 do not apply it to exec'd processes, which every
 * command is), a kernel interface the filter cannot see, or a file that was there before. Copy mode's
 * strict extractor strips the bits itself.
 *
 * Names are read as bytes (byte-names.ts): a set-id file named `$'s\xff'` is stripped like any other.
 */
import { constants, type Dirent, lstatSync, readdirSync, type Stats } from "node:fs";
import { open, readlink, realpath } from "node:fs/promises";
import { join, relative, sep } from "node:path";
import { sanitizeForTerminal } from "../../terminal/sanitize.js";
import { fsPath, nameFromBytes } from "./paths/byte-names.js";

// Not in Node's fs.constants; the same on every Linux and BSD.
const S_ISUID = 0o4000;
const S_ISGID = 0o2000;
const SET_ID = S_ISUID | S_ISGID;

/** A regular file that had a set-id bit. */
export interface SetIdFile {
  /** Path relative to the workspace. */
  path: string;
  /** Its mode before (permission bits, 0o7777). */
  mode: number;
  /** Why the bit is still there, when it could not be removed. */
  error?: string;
}

/**
 * Walks the workspace without following a symlink (a directory is entered only when its own entry
 * says it is one) and strips S_ISUID/S_ISGID from regular files; returns every file that had them.
 */
export async function stripSetIdBits(workspace: string): Promise<SetIdFile[]> {
  // The real path: stillInside() compares it with where /proc says each open file is.
  const root = await realpath(workspace).catch(() => undefined);
  if (root === undefined) return []; // gone: nothing left to strip
  const found: SetIdFile[] = [];
  const pending = [root];
  for (let dir = pending.pop(); dir !== undefined; dir = pending.pop()) {
    const setId: { path: string; info: Stats }[] = [];
    // Synchronous within one directory (a promise per lstat makes a 60,000-file tree take 3-5 s
    // instead of 1-2 s on a busy 2-core machine); the event loop gets a turn between directories.
    for (const entry of readdirOrNothing(dir)) {
      const path = join(dir, nameFromBytes(entry.name));
      // The type from the directory entry itself: no lstat, and never a link's target. Some file
      // systems leave it unknown; then lstat says.
      const kind = unknownType(entry) ? lstatOrNothing(path) : entry;
      if (kind?.isDirectory()) pending.push(path);
      if (!kind?.isFile()) continue;
      const info = lstatOrNothing(path);
      if (info?.isFile() && (info.mode & SET_ID) !== 0) setId.push({ path, info });
    }
    for (const { path, info } of setId) {
      const error = await stripOne(root, path, info);
      const file: SetIdFile = { path: relative(root, path), mode: info.mode & 0o7777 };
      found.push(error === undefined ? file : { ...file, error });
    }
    await new Promise((resolve) => setImmediate(resolve));
  }
  return found.sort((a, b) => a.path.localeCompare(b.path));
}

/**
 * chmod through a handle: O_NOFOLLOW (a symlink swapped in fails to open), O_NONBLOCK (a fifo
 * swapped in cannot hang us), then the handle must still be the regular file lstat saw, and (where
 * /proc tells) still inside the workspace: a directory above it swapped for a symlink would
 * otherwise point the chmod at a host file. Returns why it was not stripped, or undefined.
 */
async function stripOne(root: string, path: string, seen: Stats): Promise<string | undefined> {
  const flags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(fsPath(path), flags);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? String(error);
  }
  try {
    const now = await handle.stat();
    if (!now.isFile() || now.ino !== seen.ino || now.dev !== seen.dev)
      return "it changed while being checked";
    if (!(await stillInside(root, handle.fd))) return "it is no longer inside the workspace";
    if ((now.mode & SET_ID) !== 0) await handle.chmod(now.mode & 0o7777 & ~SET_ID);
    return undefined;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code ?? String(error);
  } finally {
    await handle.close();
  }
}

/** A directory that vanished or cannot be read has nothing to strip. Names as bytes: any name is seen. */
function readdirOrNothing(dir: string): Dirent<Buffer>[] {
  try {
    return readdirSync(fsPath(dir), { withFileTypes: true, encoding: "buffer" });
  } catch {
    return [];
  }
}

/** DT_UNKNOWN: the file system did not say. */
function unknownType(entry: Dirent<Buffer>): boolean {
  return !(
    entry.isFile() ||
    entry.isDirectory() ||
    entry.isSymbolicLink() ||
    entry.isFIFO() ||
    entry.isSocket() ||
    entry.isCharacterDevice() ||
    entry.isBlockDevice()
  );
}

function lstatOrNothing(path: string): Stats | undefined {
  try {
    return lstatSync(fsPath(path));
  } catch {
    return undefined;
  }
}

/** Where the open file really is, from /proc; true where /proc is not there to ask (not Linux). */
async function stillInside(root: string, fd: number): Promise<boolean> {
  if (process.platform !== "linux") return true;
  const real = await readlink(`/proc/self/fd/${fd}`).catch(() => undefined);
  return real?.startsWith(root.endsWith(sep) ? root : `${root}${sep}`) === true;
}

/** `removed the setuid bit from PATH` lines, for the user; names and errors shown with escapes. */
export function describeSetIdFiles(files: readonly SetIdFile[]): string[] {
  return files.map((file) => {
    const path = sanitizeForTerminal(file.path, { oneLine: true });
    const bits = [file.mode & S_ISUID ? "setuid" : "", file.mode & S_ISGID ? "setgid" : ""]
      .filter((bit) => bit !== "")
      .join(" and ");
    const noun = bits.includes(" and ") ? `${bits} bits` : `${bits} bit`;
    return file.error === undefined
      ? `removed the ${noun} from ${path}`
      : `could not remove the ${noun} from ${path} (${sanitizeForTerminal(file.error, { oneLine: true })}): do not run it`;
  });
}
