/**
 * Path checks for writing untrusted archive entries into a host directory, as node-tar does them:
 * no absolute names, no `..`, nothing through a symlink (every parent is opened through beneath.ts
 * and never followed, so one swapped for a link after the check is not followed either), symlink
 * targets only inside the root.
 */
import type { Stats } from "node:fs";
import { lstat, readlink, rmdir, unlink } from "node:fs/promises";
import { posix } from "node:path";
import { type BeneathDir, BeneathError, type BeneathRoot, withBeneath } from "./beneath.js";

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
 * lstat, and readlink for a symlink, of root-relative `rel`; undefined when missing or under a
 * non-directory.
 */
async function lookUp(
  beneath: BeneathRoot,
  rel: string,
): Promise<{ info: Stats; link?: string } | undefined> {
  const parts = rel.split("/");
  const name = parts.pop() as string;
  let dir: BeneathDir;
  try {
    dir = await beneath.dir(parts);
  } catch (error) {
    if (error instanceof BeneathError && error.code !== "ELOOP") return undefined;
    throw error;
  }
  const info = await lstat(dir.at(name)).catch((error: unknown) => {
    if (code(error) === "ENOENT" || code(error) === "ENOTDIR") return undefined;
    throw error;
  });
  if (!info?.isSymbolicLink()) return info && { info };
  return { info, link: await readlink(dir.at(name)) };
}

/**
 * Resolves the symlink at root-relative `path` component by component against the host tree (lstat
 * and readlink, never open), following every link on the way, the way `readlink -f` does: with
 * `d1/d2/s1 -> ../..`, a lexically harmless `d1/d2/s2 -> s1/../..` leads above the root. `target`
 * stands in for the link's own target when it is not written yet. Also refused: a link to an
 * absolute path anywhere on the way, more than 40 links, and `..` out of a component that is not a
 * directory (missing, or a file): it is one later, so a link created there could change the answer.
 * Walks `beneath` elsewhere: a `BeneathDir` taken before is not valid afterwards.
 */
export async function resolveSymlink(
  beneath: BeneathRoot,
  path: string,
  target?: string,
): Promise<LinkResolution> {
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
      let found: Awaited<ReturnType<typeof lookUp>>;
      try {
        found = await lookUp(beneath, rel);
      } catch (error) {
        // Every directory on the stack was one when it was looked at: it was swapped meanwhile.
        if (error instanceof BeneathError)
          return { refusal: `path goes through a symlink (${error.at})`, escapes: false, followed };
        // A link replaced or removed between its lstat and its readlink.
        if (code(error) === "EINVAL" || code(error) === "ENOENT")
          return { refusal: `${rel} changed while the symlink was resolved`, escapes: false, followed };
        throw error;
      }
      if (found?.link !== undefined) link = found.link;
      else if (!found?.info.isDirectory()) notDirectory = rel;
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
 * Reaches the parent directory of `parts` under the root, every component opened through its
 * parent and never through a symlink: a symlink or a non-directory on the way is a refusal reason
 * (a string); a missing one is created (mode 0755) when `create`, else "missing". The directory
 * returned is the one checked, whatever is swapped in at its path afterwards.
 */
export async function checkParents(
  beneath: BeneathRoot,
  parts: readonly string[],
  create: boolean,
): Promise<BeneathDir | string> {
  try {
    return await beneath.dir(parts.slice(0, -1), create ? 0o755 : undefined);
  } catch (error) {
    if (!(error instanceof BeneathError)) throw error;
    const at = error.at === "" ? "the workspace root" : error.at;
    if (error.code === "ELOOP") return `path goes through a symlink (${at})`;
    if (error.code === "ENOTDIR") return `parent ${at} is not a directory`;
    return create ? `parent ${at} disappeared while it was created` : "missing";
  }
}

/** Removes `name` in `parent` (a directory only when empty); `info` is its lstat. */
export type RemoveEntry = (parent: BeneathDir, name: string, info: Stats) => Promise<void>;

const removeEntry: RemoveEntry = async (parent, name, info) => {
  if (info.isDirectory()) await rmdir(parent.at(name));
  else await unlink(parent.at(name));
};

/**
 * Deletes workspace-relative paths under `root`, children before parents, never following a
 * symlink: a symlink is removed itself, a directory only when empty (one that still holds files
 * which were never copied into the sandbox is kept and reported). A path `refusePath` refuses is
 * kept with everything under it. `remove` does the removal itself (copy mode's apply moves files
 * aside instead).
 */
export async function strictDelete(
  root: string,
  paths: readonly string[],
  refusePath?: (path: string) => string | undefined,
  remove: RemoveEntry = removeEntry,
): Promise<{ deleted: string[]; refused: Refusal[] }> {
  const deleted: string[] = [];
  const refused: Refusal[] = [];
  const held = paths.filter((path) => refusePath?.(path) !== undefined);
  await withBeneath(root, async (beneath) => {
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
      const parent = await checkParents(beneath, parts, false);
      if (parent === "missing") continue;
      if (typeof parent === "string") {
        refused.push({ path, reason: parent });
        continue;
      }
      const name = parts.at(-1) as string;
      const info = await lstat(parent.at(name)).catch(() => undefined);
      if (!info) continue;
      try {
        await remove(parent, name, info);
        deleted.push(path);
      } catch (error) {
        const why =
          code(error) === "ENOTEMPTY"
            ? "directory is not empty (holds files that were not copied)"
            : beneath.explain(String(error));
        refused.push({ path, reason: why });
      }
    }
  });
  return { deleted, refused };
}
