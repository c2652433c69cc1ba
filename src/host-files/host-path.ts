/**
 * Directories on the host that harness writes its own files in (transcripts, saved outputs, the
 * state directory), reached without following a link a sandbox could have planted.
 *
 * A workspace is writable by its sandbox, and harness often runs as root: a transcript or an outputs
 * directory inside it (`--transcript ws/t.jsonl`, or a state directory under a workspace) can be
 * swapped for `-> /etc/shadow` or `-> /root/.ssh` by any command, between two of harness's writes.
 * So below a directory registered with `markSandboxWritable`, each component is opened through its
 * parent's descriptor with O_NOFOLLOW (a symlink there is refused), and the directory is then held
 * open: every file in it is reached as `/proc/self/fd/<fd>/<name>`, so a directory moved or swapped
 * after it was opened is still the one written in. Symlinks above every such directory are the
 * user's (`/var -> private/var`, a `~/.local/state` kept elsewhere) and are followed, one component
 * at a time, so that a link leading into a workspace is walked strictly from there on.
 *
 * The synchronous twin of src/sandbox/host/beneath.ts (the transcript is written synchronously
 * after every step). Without /proc/self/fd this falls back to lstat per component and full paths,
 * with the race beneath.ts describes.
 */
import {
  constants,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readlinkSync,
  realpathSync,
  statSync,
} from "node:fs";
import { isAbsolute, join, resolve, sep } from "node:path";
import { HarnessError } from "../errors.js";
import { closeQuietly } from "./close-quietly.js";

/**
 * Linux's O_PATH, which Node does not export; its value on the architectures listed. An O_PATH
 * descriptor needs no read permission on the directory (as lstat needs none), only search.
 */
export const O_PATH =
  process.platform === "linux" &&
  ["x64", "arm64", "arm", "ia32", "ppc64", "s390x", "riscv64", "loong64", "mips", "mipsel"].includes(
    process.arch,
  )
    ? 0o10000000
    : 0;
const DIRECTORY_FLAGS = O_PATH | constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** Linux's MAXSYMLINKS. */
const MAX_LINKS = 40;

/** harness refused to write a host path: it is (or leads through) a link, a fifo, a swapped file. */
export class HostPathError extends HarnessError {
  override readonly name = "HostPathError";
  constructor(
    /** The path as harness names it. */
    readonly path: string,
    /** Why, e.g. "is a symlink (the sandbox can write there)". */
    readonly reason: string,
    /** True when the refusal is only that something is missing (no link, nothing swapped in). */
    readonly missing = false,
  ) {
    super(`not writing ${path}: ${reason}`);
  }
}

const writableRoots = new Set<string>();

/**
 * Registers `realPath` (a real path: a workspace as harness mounts it) as a directory a sandbox can
 * write: from now on, no symlink at or below it is followed by anything here. Process-wide, since a
 * sandbox of one run can plant links where another run of the same process writes (`harness batch`).
 */
export function markSandboxWritable(realPath: string): void {
  writableRoots.add(resolve(realPath));
}

/** `markSandboxWritable` of a workspace as given (resolved to its real path); one that is missing is skipped. */
export function markWorkspaceWritable(given: string): void {
  try {
    markSandboxWritable(realpathSync(given));
  } catch {
    // Missing: opening its sandbox fails, and nothing is written in it.
  }
}

/** True when `realPath` is a registered directory or below one. */
export function isSandboxWritable(realPath: string): boolean {
  for (const root of writableRoots) {
    if (realPath === root || realPath.startsWith(root === sep ? root : `${root}${sep}`)) return true;
  }
  return false;
}

/** A directory held open; the names in it are resolved, never what leads to it. */
export interface HostDir {
  /** The path it was opened by (for messages). */
  readonly path: string;
  /** Its real path when it was opened. */
  readonly realPath: string;
  /** The open descriptor (O_PATH where there is one), or undefined in the fallback. */
  readonly fd: number | undefined;
  /**
   * The path of `name` (one component) in this directory: only `name` is resolved, so it is safe
   * with lstat, open with O_NOFOLLOW, mkdir, rename, unlink.
   */
  at(name: string): string;
  /** The names in it (readdir of the directory held, whatever is at its path now). */
  list(): string[];
  /** Closes the descriptor; harmless twice. */
  close(): void;
}

let procWorks: boolean | undefined;

/**
 * True when `/proc/self/fd/<fd>/<name>` reaches `name` in the directory held as `fd` (Linux with
 * /proc): what every walk that never follows a link relies on.
 */
export function heldDescriptorsWork(): boolean {
  return viaProc();
}

function viaProc(): boolean {
  if (procWorks === undefined) {
    let fd: number | undefined;
    try {
      fd = openSync("/", DIRECTORY_FLAGS);
      const own = statSync("/");
      const seen = statSync(`/proc/self/fd/${fd}`);
      procWorks = own.ino === seen.ino && own.dev === seen.dev;
    } catch {
      procWorks = false;
    } finally {
      if (fd !== undefined) closeQuietly(fd);
    }
  }
  return procWorks;
}

function checkName(name: string): void {
  if (name === "" || name === "." || name === ".." || name.includes("/") || name.includes("\0"))
    throw new Error(`not a single path component: ${JSON.stringify(name)}`);
}

function heldDir(path: string, realPath: string, fd: number | undefined): HostDir {
  let open = fd;
  return {
    path,
    realPath,
    get fd() {
      return open;
    },
    at(name) {
      checkName(name);
      return open === undefined ? join(realPath, name) : `/proc/self/fd/${open}/${name}`;
    },
    list() {
      return readdirSync(open === undefined ? realPath : `/proc/self/fd/${open}`);
    },
    close() {
      if (open !== undefined) closeQuietly(open);
      open = undefined;
    },
  };
}

interface Step {
  real: string;
  fd: number | undefined;
}

/**
 * Opens the directory `path` (relative to the working directory, or absolute) and holds it. With
 * `createMode`, missing directories are created (mkdir, so the umask applies). Throws `HostPathError`
 * when a component at or below a sandbox-writable directory is a symlink, a component is not a
 * directory, or one is missing without `createMode`.
 */
export function openHostDir(path: string, createMode?: number): HostDir {
  const proc = viaProc();
  const queue = resolve(path)
    .split(sep)
    .filter((part) => part !== "");
  const stack: Step[] = [{ real: sep, fd: proc ? openSync(sep, DIRECTORY_FLAGS) : undefined }];
  const top = () => stack.at(-1) as Step;
  let links = 0;
  try {
    while (queue.length > 0) {
      const part = queue.shift() as string;
      if (part === "." || part === "") continue;
      if (part === "..") {
        // Only a followed link's target says "..": the given path was resolved lexically.
        if (stack.length > 1) {
          const gone = stack.pop() as Step;
          if (gone.fd !== undefined) closeQuietly(gone.fd);
        }
        continue;
      }
      const here = top();
      const real = join(here.real, part);
      const at = here.fd === undefined ? real : `/proc/self/fd/${here.fd}/${part}`;
      const opened = openOne(at, createMode, proc);
      if (opened === "symlink") {
        if (isSandboxWritable(here.real) || isSandboxWritable(real))
          throw new HostPathError(path, `${real} is a symlink (the sandbox can write there)`);
        if (++links > MAX_LINKS) throw new HostPathError(path, "too many levels of symlinks");
        const target = readlinkSync(at);
        if (isAbsolute(target)) {
          while (stack.length > 1) {
            const gone = stack.pop() as Step;
            if (gone.fd !== undefined) closeQuietly(gone.fd);
          }
        }
        queue.unshift(...target.split("/"));
        continue;
      }
      if (opened === "missing") throw new HostPathError(path, `${real} does not exist`, true);
      if (opened === "not a directory") throw new HostPathError(path, `${real} is not a directory`);
      stack.push({ real, fd: opened });
    }
  } catch (error) {
    for (const step of stack) if (step.fd !== undefined) closeQuietly(step.fd);
    throw error;
  }
  const last = stack.pop() as Step;
  for (const step of stack) if (step.fd !== undefined) closeQuietly(step.fd);
  return heldDir(path, last.real, last.fd);
}

/** The directory's descriptor (undefined in the fallback), or why it could not be opened. */
function openOne(
  at: string,
  createMode: number | undefined,
  proc: boolean,
): number | undefined | "symlink" | "missing" | "not a directory" {
  for (let attempt = 0; ; attempt++) {
    let code: string | undefined;
    if (proc) {
      try {
        return openSync(at, DIRECTORY_FLAGS);
      } catch (error) {
        code = (error as NodeJS.ErrnoException).code;
        if (code !== "ENOENT" && code !== "ENOTDIR" && code !== "ELOOP") throw error;
      }
    }
    const info = lstatOrUndefined(at);
    if (info?.isSymbolicLink()) return "symlink";
    if (info !== undefined && !info.isDirectory()) return "not a directory";
    // Fallback: lstat here, the full path used afterwards (racy, see the top of this file).
    if (info !== undefined && !proc) return undefined;
    if (info === undefined && (createMode === undefined || attempt > 0)) return "missing";
    if (info === undefined) {
      try {
        mkdirSync(at, { mode: createMode });
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      }
    }
  }
}

function lstatOrUndefined(path: string) {
  try {
    return lstatSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return undefined;
    throw error;
  }
}
