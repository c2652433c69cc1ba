/**
 * Path checks for writing untrusted archive entries into a host directory, as node-tar does them:
 * no absolute names, no `..`, nothing through a symlink (every parent is checked with lstat and
 * never followed), symlink targets only inside the root. See shared/notes/sandbox-pitfalls.md
 * ("Host side", CVE-2018-15664).
 */
import { lstat, mkdir, readlink, rmdir, unlink } from "node:fs/promises";
import { join, posix } from "node:path";

/** A path that was not written or deleted, and why. A refusal is a result, not an exception. */
export interface Refusal {
  path: string;
  reason: string;
}

/** The components of an entry name, or why it is refused. "" and "." components are dropped. */
export function safeComponents(name: string): string[] | Refusal {
  if (name.includes("\0")) return { path: name, reason: "name contains a NUL byte" };
  if (name.startsWith("/") || /^[a-zA-Z]:[\\/]/.test(name)) return { path: name, reason: "absolute path" };
  const parts = name.split("/").filter((p) => p !== "" && p !== ".");
  if (parts.includes("..")) return { path: name, reason: "path contains '..'" };
  if (parts.some((p) => p.includes("\\"))) return { path: name, reason: "path contains a backslash" };
  return parts;
}

/**
 * Why a symlink at `path` with this target is refused on its text alone, or undefined. Only a first
 * check: `resolveSymlink` then follows the links on the way, which can climb higher than the text says.
 */
export function symlinkRefusal(path: string, target: string): string | undefined {
  if (target === "") return "symlink with an empty target";
  if (target.startsWith("/")) return `symlink to an absolute path (${target})`;
  const resolved = posix.normalize(posix.join(posix.dirname(path), target));
  if (resolved === ".." || resolved.startsWith("../"))
    return `symlink points outside the workspace (${target})`;
  return undefined;
}

function code(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException).code;
}

/** Linux's MAXSYMLINKS: more links than this in one lookup is ELOOP. */
const MAX_LINKS = 40;

/** Where a symlink leads once every link on the way is followed, as the kernel would. */
export interface LinkResolution {
  /** Why the link is refused, or undefined when it stays inside the root. */
  refusal?: string | undefined;
  /** True when it leaves the root (as opposed to a loop, or `..` out of a path that is not a directory). */
  escapes: boolean;
  /** Root-relative paths of the symlinks followed on the way, the link itself included. */
  followed: string[];
}

/**
 * Resolves the symlink at root-relative `path` component by component against the host tree (lstat
 * and readlink, never open), following every link on the way, the way `readlink -f` does: with
 * `d1/d2/s1 -> ../..`, a lexically harmless `d1/d2/s2 -> s1/../..` leads above the root. `target`
 * stands in for the link's own target when it is not written yet. Also refused: a link to an
 * absolute path anywhere on the way, more than 40 links, and `..` out of a component that is not a
 * directory (missing, or a file): it is one later, so a link created there could change the answer.
 */
export async function resolveSymlink(root: string, path: string, target?: string): Promise<LinkResolution> {
  const stack: string[] = [];
  const queue = path.split("/");
  const followed: string[] = [];
  let own = target ?? "";
  let notDirectory: string | undefined;
  while (queue.length > 0) {
    const part = queue.shift() as string;
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (notDirectory !== undefined) {
        const refusal = `symlink target uses '..' after ${notDirectory}, which is not a directory here (${own})`;
        return { refusal, escapes: false, followed };
      }
      if (stack.length === 0) {
        const via = followed.length > 1 ? ` via ${followed.slice(1).join(", ")}` : "";
        const refusal = `symlink points outside the workspace once links are followed (${own}${via})`;
        return { refusal, escapes: true, followed };
      }
      stack.pop();
      continue;
    }
    stack.push(part);
    if (notDirectory !== undefined) continue;
    const rel = stack.join("/");
    let link: string | undefined;
    if (rel === path && target !== undefined) link = target;
    else {
      const info = await lstat(join(root, rel)).catch((error: unknown) => {
        if (code(error) === "ENOENT" || code(error) === "ENOTDIR") return undefined;
        throw error;
      });
      if (info?.isSymbolicLink()) link = await readlink(join(root, rel));
      else if (!info?.isDirectory()) notDirectory = rel;
    }
    if (link === undefined) continue;
    if (followed.length === 0) own = link;
    if (followed.length >= MAX_LINKS)
      return { refusal: "too many levels of symlinks", escapes: false, followed };
    followed.push(rel);
    if (link.startsWith("/")) {
      const refusal =
        rel === path
          ? `symlink to an absolute path (${link})`
          : `symlink goes through ${rel}, a symlink to an absolute path (${link})`;
      return { refusal, escapes: true, followed };
    }
    stack.pop();
    queue.unshift(...link.split("/"));
  }
  return { escapes: false, followed };
}

/**
 * Checks every parent directory of `parts` under `root` with lstat: a symlink or a non-directory
 * is a refusal reason; a missing one is created (mode 0755) when `create`, else "missing".
 */
export async function checkParents(
  root: string,
  parts: readonly string[],
  create: boolean,
): Promise<string | undefined> {
  for (let i = 1; i < parts.length; i++) {
    const rel = parts.slice(0, i).join("/");
    const full = join(root, rel);
    const info = await lstat(full).catch((error: unknown) => {
      if (code(error) === "ENOENT") return undefined;
      throw error;
    });
    if (!info) {
      if (!create) return "missing";
      await mkdir(full, { mode: 0o755 });
      continue;
    }
    if (info.isSymbolicLink()) return `path goes through a symlink (${rel})`;
    if (!info.isDirectory()) return `parent ${rel} is not a directory`;
  }
  return undefined;
}

/**
 * Deletes workspace-relative paths under `root`, children before parents, never following a
 * symlink: a symlink is removed itself, a directory only when empty (one that still holds files
 * which were never copied into the sandbox is kept and reported). A path `refusePath` refuses is
 * kept with everything under it.
 */
export async function strictDelete(
  root: string,
  paths: readonly string[],
  refusePath?: (path: string) => string | undefined,
): Promise<{ deleted: string[]; refused: Refusal[] }> {
  const deleted: string[] = [];
  const refused: Refusal[] = [];
  const held = paths.filter((path) => refusePath?.(path) !== undefined);
  for (const path of [...paths].sort().reverse()) {
    const parts = safeComponents(path);
    if (!Array.isArray(parts) || parts.length === 0) {
      refused.push(Array.isArray(parts) ? { path, reason: "the workspace root" } : parts);
      continue;
    }
    const above = held.find((h) => path.startsWith(`${h}/`));
    const policy = refusePath?.(parts.join("/")) ?? (above && `inside ${above}, which was refused`);
    if (policy) {
      refused.push({ path, reason: policy });
      continue;
    }
    const parentProblem = await checkParents(root, parts, false);
    if (parentProblem === "missing") continue;
    if (parentProblem) {
      refused.push({ path, reason: parentProblem });
      continue;
    }
    const full = join(root, ...parts);
    const info = await lstat(full).catch(() => undefined);
    if (!info) continue;
    try {
      if (info.isDirectory()) await rmdir(full);
      else await unlink(full);
      deleted.push(path);
    } catch (error) {
      const why =
        code(error) === "ENOTEMPTY"
          ? "directory is not empty (holds files that were not copied)"
          : String(error);
      refused.push({ path, reason: why });
    }
  }
  return { deleted, refused };
}
