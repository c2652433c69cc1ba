/**
 * One file harness writes on the host, in a directory held open (host-path.ts): opened without
 * following a link, only when it is a regular file, kept open and written through its descriptor,
 * and checked before every write to still be the file at its name. A sandbox that swaps it (for a
 * symlink to /etc/shadow, a hard link to another file, a fifo) gets nothing written anywhere but the
 * file harness opened, and harness stops writing it and says so.
 */
import {
  constants,
  fstatSync,
  ftruncateSync,
  lstatSync,
  openSync,
  readSync,
  type Stats,
  writeSync,
} from "node:fs";
import { basename, dirname } from "node:path";
import { closeQuietly } from "./close-quietly.js";
import { type HostDir, HostPathError, openHostDir } from "./host-path.js";

export interface HostFileOptions {
  /** Mode of a file created (the umask applies). */
  mode: number;
  /** Appends (O_APPEND); else writes from the start of a new file. */
  append?: boolean;
  /** Only a file created now: an existing one is refused. */
  exclusive?: boolean;
  /** False: only an existing file is opened (a missing one is a refusal). Default true. */
  create?: boolean;
  /** Empties an existing file (after it passed every check, never before). */
  truncate?: boolean;
  /** Opened for reading too (`readTail`). */
  read?: boolean;
}

/** A host file held open. */
export interface HostFile {
  /** The path as harness names it (for messages). */
  readonly path: string;
  /** The path that reaches it through its held directory (for reading it back). */
  readonly openPath: string;
  /** True when this open created it. */
  readonly created: boolean;
  /** Device and inode, to tell it from a file swapped in at its name after it is closed. */
  readonly identity: { dev: number; ino: number };
  /**
   * Writes all of `data` through the descriptor, after `check()`. Throws `HostPathError` when the name
   * no longer leads to this file, or the write's own error. An append that fails leaves the file as
   * it was before it (a full disk: nothing half-written).
   */
  write(data: string | Uint8Array): void;
  /** Throws `HostPathError` unless the name in the directory is still this file. */
  check(): void;
  /** Its last `bytes` bytes (fewer in a shorter file); needs the `read` option. */
  readTail(bytes: number): Buffer;
  /** Closes it; harmless twice. */
  close(): void;
}

const BASE = constants.O_NOFOLLOW | constants.O_NONBLOCK;

/**
 * Opens `name` in `dir` for writing: created (O_EXCL) when missing; when it exists (and not
 * `exclusive`), only a regular file with one link is taken. A file harness did not create and that
 * has another name too is refused: appending to it would write wherever the other name is (a hard
 * link made to a root-only file), and nothing harness keeps is ever linked twice. Throws
 * `HostPathError` for every refusal, the OS error for anything else (disk full, permissions).
 */
export function openHostFile(dir: HostDir, name: string, options: HostFileOptions): HostFile {
  const path = `${dir.path.replace(/\/$/, "")}/${name}`;
  const at = dir.at(name);
  const flags =
    BASE | (options.read ? constants.O_RDWR : constants.O_WRONLY) | (options.append ? constants.O_APPEND : 0);
  let fd: number;
  let created = true;
  try {
    if (options.create === false) throw Object.assign(new Error("not creating"), { code: "EEXIST" });
    fd = openSync(at, flags | constants.O_CREAT | constants.O_EXCL, options.mode);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "EEXIST") throw error;
    if (options.exclusive) throw new HostPathError(path, "it exists already (harness did not make it)");
    created = false;
    fd = openExisting(at, flags, path);
  }
  let info: Stats;
  try {
    info = fstatSync(fd);
    if (!info.isFile()) throw new HostPathError(path, `${kindOf(info)}, not a regular file`);
    if (!created && info.nlink > 1)
      throw new HostPathError(path, `it has ${info.nlink} hard links (one may lead anywhere)`);
    if (!created && options.truncate) ftruncateSync(fd, 0);
  } catch (error) {
    closeQuietly(fd);
    throw error;
  }
  let open: number | undefined = fd;
  const check = () => {
    let now: Stats | undefined;
    try {
      now = lstatSync(at);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR") throw error;
    }
    if (now === undefined) throw new HostPathError(path, "it was removed since harness opened it");
    if (now.ino !== info.ino || now.dev !== info.dev)
      throw new HostPathError(
        path,
        `it was replaced by ${now.isFile() ? "another file" : kindOf(now)} since harness opened it (the sandbox can write there)`,
      );
  };
  return {
    path,
    openPath: at,
    created,
    identity: { dev: info.dev, ino: info.ino },
    check,
    write(data) {
      if (open === undefined) throw new HostPathError(path, "it is closed");
      check();
      const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
      // An append that fails part way (a full disk writes what fits, then ENOSPC) is cut back to
      // where it began: a torn last line would otherwise sit mid-file once a later run (`--continue`)
      // appends after it, and the reader would refuse the whole file.
      const before = options.append ? fstatSync(open).size : undefined;
      let done = 0;
      try {
        while (done < bytes.length) done += writeSync(open, bytes, done, bytes.length - done);
      } catch (error) {
        if (before !== undefined && done > 0) undoAppend(open, before);
        throw error;
      }
    },
    readTail(bytes) {
      if (open === undefined) throw new HostPathError(path, "it is closed");
      const size = fstatSync(open).size;
      const tail = Buffer.alloc(Math.min(bytes, size));
      const read = readSync(open, tail, 0, tail.length, size - tail.length);
      return tail.subarray(0, read);
    },
    close() {
      if (open !== undefined) closeQuietly(open);
      open = undefined;
    },
  };
}

/** Cuts a file back to `size`; the write's own error is what the caller reports, so this one is dropped. */
function undoAppend(fd: number, size: number): void {
  try {
    ftruncateSync(fd, size);
  } catch {
    // Nothing more can be done: the reader's tolerance of a torn last line is what is left.
  }
}

function openExisting(at: string, flags: number, path: string): number {
  try {
    return openSync(at, flags);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // O_NOFOLLOW on a symlink; O_NONBLOCK on a fifo nobody reads (a blocking open would hang).
    if (code === "ELOOP") throw new HostPathError(path, "it is a symlink (the sandbox can write there)");
    if (code === "ENXIO") throw new HostPathError(path, "it is a fifo, not a regular file");
    if (code === "ENOENT") throw new HostPathError(path, "it was removed since harness wrote it");
    if (code === "EISDIR") throw new HostPathError(path, "it is a directory, not a regular file");
    throw error;
  }
}

function kindOf(info: Stats): string {
  if (info.isSymbolicLink()) return "a symlink";
  if (info.isFIFO()) return "a fifo";
  if (info.isDirectory()) return "a directory";
  if (info.isSocket()) return "a socket";
  if (info.isCharacterDevice() || info.isBlockDevice()) return "a device";
  return "a file";
}

/**
 * Writes `data` as the whole of the file at `path` (mode 0600 when created): never through a link,
 * never into a fifo or a file with another name. Throws `HostPathError` for a refusal.
 */
export function writeHostFile(path: string, data: string | Uint8Array): void {
  const dir = openHostDir(dirname(path), 0o700);
  try {
    const file = openHostFile(dir, basename(path), { mode: 0o600, truncate: true });
    try {
      file.write(data);
    } finally {
      file.close();
    }
  } finally {
    dir.close();
  }
}
