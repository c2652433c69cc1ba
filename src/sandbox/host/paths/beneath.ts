/**
 * Paths under a root directory reached without following a symlink at any component: what
 * openat(2) with O_NOFOLLOW at every step gives in C, for Node, which has no openat.
 *
 * Checking each component with lstat and then using the full path is racy: a process still
 * running in the workspace's bind container can swap a checked directory for a symlink in between
 * (`a -> /etc`), and harness, often root, then reads /etc/shadow into the sandbox or writes outside
 * the workspace. O_NOFOLLOW guards only the last component. So each directory is opened once,
 * through its parent's descriptor, with O_DIRECTORY | O_NOFOLLOW (a symlink there fails), and every
 * operation on a name goes through `/proc/self/fd/<dirfd>/<name>`: that magic link jumps straight to
 * the open directory, so the kernel resolves only `<name>`, and a directory swapped or moved after it
 * was opened is still the one operated in.
 *
 * Without /proc/self/fd (macOS with Docker Desktop, a /proc mounted elsewhere) this falls back to
 * lstat of each component and full paths, with the race described above.
 *
 * Names are lossless strings (byte-names.ts): a component that is not UTF-8 is reached by its exact
 * bytes, so `at` and `path` give a Buffer for such a name (every fs call takes one).
 */

import { constants } from "node:fs";
import { chmod, chown, type FileHandle, lchown, lstat, mkdir, open, stat } from "node:fs/promises";
import { join } from "node:path";
import { O_PATH } from "../../../host-files/host-path.js";
import { fsPath } from "./byte-names.js";

/** O_PATH (host-files/host-path.ts): search permission is enough, as for lstat. */
const DIRECTORY_FLAGS = O_PATH | constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** A directory reached beneath the root. */
export interface BeneathDir {
  /** Root-relative path, `/`-separated; "" for the root. */
  readonly rel: string;
  /**
   * The directory itself, for readdir: `/proc/self/fd/<fd>`, which leads to the open directory
   * whatever now sits at its path (in the fallback, the full path).
   */
  readonly path: string | Buffer;
  /**
   * The path of `name` (one component) in this directory: only `name` is resolved, so it is safe
   * with lstat, readlink, open with O_NOFOLLOW, mkdir, symlink, rename, unlink, rmdir, lchown.
   */
  at(name: string): string | Buffer;
  /** chmod of this directory itself. */
  chmod(mode: number): Promise<void>;
  /** chown of this directory itself (lchown of the magic link would change nothing). */
  chown(uid: number, gid: number): Promise<void>;
}

/**
 * A component was a symlink (`code` "ELOOP"), not a directory ("ENOTDIR"), or missing ("ENOENT").
 * `at` is its root-relative path.
 */
export class BeneathError extends Error {
  constructor(
    readonly code: "ELOOP" | "ENOTDIR" | "ENOENT",
    readonly at: string,
  ) {
    const what = { ELOOP: "is a symlink", ENOTDIR: "is not a directory", ENOENT: "does not exist" }[code];
    super(`${at === "" ? "the root" : at} ${what}`);
  }
}

interface Opened {
  name: string;
  dir: BeneathDir;
  handle?: FileHandle | undefined;
}

function checkName(name: string): void {
  if (name === "" || name === "." || name === ".." || name.includes("/") || name.includes("\0")) {
    throw new Error(`not a single path component: ${JSON.stringify(name)}`);
  }
}

function procDir(rel: string, handle: FileHandle): BeneathDir {
  const path = `/proc/self/fd/${handle.fd}`;
  return {
    rel,
    path,
    at: (name) => {
      checkName(name);
      return fsPath(`${path}/${name}`);
    },
    // The magic link leads to the directory itself; an O_PATH descriptor has no fchmod.
    chmod: (mode) => chmod(path, mode),
    chown: (uid, gid) => chown(path, uid, gid),
  };
}

function plainDir(rel: string, text: string): BeneathDir {
  const path = fsPath(text);
  return {
    rel,
    path,
    at: (name) => {
      checkName(name);
      return fsPath(join(text, name));
    },
    chmod: (mode) => chmod(path, mode),
    chown: (uid, gid) => lchown(path, uid, gid),
  };
}

/**
 * The root and the chain of directories opened below it for the latest `dir()` call. A
 * `BeneathDir` stays valid until `dir()` is called for a path that is not inside it, or `close()`;
 * walking a tree parents first (a scan, an archive's entries) reopens nothing. Not for concurrent use.
 */
export class BeneathRoot {
  private readonly chain: Opened[] = [];
  private viaProc = false;

  /**
   * `root` is an absolute real path (harness's workspace, never a symlink itself), opened at the
   * first `dir()`: a root that is gone fails there, like any other component. `useProc: false`
   * forces the fallback (for its tests).
   */
  constructor(
    private readonly rootPath: string,
    private readonly options = { useProc: true },
  ) {}

  /**
   * The directory at these root-relative components, each opened through its parent and never
   * through a symlink; with `createMode`, a missing one is created (mkdir, so the umask applies).
   * Throws `BeneathError` naming the first component that is a symlink, not a directory, or missing.
   */
  async dir(parts: readonly string[], createMode?: number): Promise<BeneathDir> {
    for (const part of parts) checkName(part);
    if (this.chain.length === 0) this.chain.push(await this.openRoot());
    let keep = 1;
    while (keep < this.chain.length && keep <= parts.length && this.chain[keep]?.name === parts[keep - 1])
      keep++;
    while (this.chain.length > keep) await this.chain.pop()?.handle?.close();
    for (let i = keep - 1; i < parts.length; i++) {
      this.chain.push(await this.child(this.chain.at(-1) as Opened, parts[i] as string, createMode));
    }
    return (this.chain.at(-1) as Opened).dir;
  }

  /**
   * `text` (an error message) with each `/proc/self/fd/<fd>` held here replaced by the path it stands
   * for.
   */
  explain(text: string): string {
    return text.replace(/\/proc\/self\/fd\/(\d+)/g, (whole, fd: string) => {
      const opened = this.chain.find((o) => o.handle?.fd === Number(fd));
      return opened ? join(this.rootPath, opened.dir.rel) : whole;
    });
  }

  /** Closes every directory it holds; nothing may use them afterwards. */
  async close(): Promise<void> {
    while (this.chain.length > 0) await this.chain.pop()?.handle?.close();
  }

  private async openRoot(): Promise<Opened> {
    const handle = await open(this.rootPath, DIRECTORY_FLAGS).catch(async (error: unknown) => {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR" && code !== "ELOOP") throw error;
      const info = await lstat(this.rootPath).catch(() => undefined);
      throw new BeneathError(info === undefined ? "ENOENT" : info.isSymbolicLink() ? "ELOOP" : "ENOTDIR", "");
    });
    try {
      const [own, viaProc] = await Promise.all([
        handle.stat(),
        stat(`/proc/self/fd/${handle.fd}`).catch(() => undefined),
      ]);
      if (this.options.useProc && viaProc?.ino === own.ino && viaProc.dev === own.dev) {
        this.viaProc = true;
        return { name: "", dir: procDir("", handle), handle };
      }
    } catch (error) {
      await handle.close();
      throw error;
    }
    await handle.close();
    return { name: "", dir: plainDir("", this.rootPath) };
  }

  private async child(parent: Opened, name: string, createMode: number | undefined): Promise<Opened> {
    const path = parent.dir.at(name);
    const rel = parent.dir.rel === "" ? name : `${parent.dir.rel}/${name}`;
    for (let attempt = 0; ; attempt++) {
      const found = await this.openOne(path, rel);
      if (typeof found !== "string") return { name, ...found };
      if (found !== "ENOENT" || createMode === undefined || attempt > 0) throw new BeneathError(found, rel);
      await mkdir(path, { mode: createMode }).catch((error: unknown) => {
        const code = (error as NodeJS.ErrnoException).code;
        // ENOENT: the parent itself was removed after it was opened (it is never re-resolved).
        if (code === "ENOENT") throw new BeneathError("ENOENT", parent.dir.rel);
        if (code !== "EEXIST") throw error;
      });
    }
  }

  /** The opened directory, or why it could not be: a symlink, not a directory, missing. */
  private async openOne(
    path: string | Buffer,
    rel: string,
  ): Promise<{ dir: BeneathDir; handle?: FileHandle } | BeneathError["code"]> {
    if (this.viaProc) {
      try {
        const handle = await open(path, DIRECTORY_FLAGS);
        return { dir: procDir(rel, handle), handle };
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ENOENT") return "ENOENT";
        // O_DIRECTORY | O_NOFOLLOW on a symlink gives ENOTDIR on Linux 6.x (ELOOP without O_DIRECTORY).
        if (code !== "ENOTDIR" && code !== "ELOOP") throw error;
        const info = await lstat(path).catch(() => undefined);
        return info === undefined ? "ENOENT" : info.isSymbolicLink() ? "ELOOP" : "ENOTDIR";
      }
    }
    // Fallback: lstat here, the full path used afterwards: racy (see the top of this file).
    const info = await lstat(path).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    });
    if (info === undefined) return "ENOENT";
    if (info.isSymbolicLink()) return "ELOOP";
    if (!info.isDirectory()) return "ENOTDIR";
    return { dir: plainDir(rel, join(this.rootPath, rel)) };
  }
}

/** Runs `use` on a `BeneathRoot` of `root`, and closes every directory it opened, whatever happens. */
export async function withBeneath<T>(root: string, use: (beneath: BeneathRoot) => Promise<T>): Promise<T> {
  const beneath = new BeneathRoot(root);
  try {
    return await use(beneath);
  } finally {
    await beneath.close();
  }
}
