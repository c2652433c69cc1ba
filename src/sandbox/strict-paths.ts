/**
 * Path checks for writing untrusted archive entries into a host directory, as node-tar does them:
 * no absolute names, no `..`, nothing through a symlink (every parent is checked with lstat and
 * never followed), symlink targets only inside the root. See shared/notes/sandbox-pitfalls.md
 * ("Host side", CVE-2018-15664).
 */
import { lstat, mkdir, rmdir, unlink } from "node:fs/promises";
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

/** Why a symlink at `path` with this target is refused, or undefined when it stays inside the root. */
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
 * which were never copied into the sandbox is kept and reported).
 */
export async function strictDelete(
  root: string,
  paths: readonly string[],
): Promise<{ deleted: string[]; refused: Refusal[] }> {
  const deleted: string[] = [];
  const refused: Refusal[] = [];
  for (const path of [...paths].sort().reverse()) {
    const parts = safeComponents(path);
    if (!Array.isArray(parts) || parts.length === 0) {
      refused.push(Array.isArray(parts) ? { path, reason: "the workspace root" } : parts);
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
