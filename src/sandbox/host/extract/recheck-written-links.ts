import { lstat, readlink, unlink } from "node:fs/promises";
import { BeneathError, type BeneathRoot } from "../paths/beneath.js";
import { resolveSymlink } from "../paths/strict-paths.js";
import type { ExtractResult } from "./strict-extract-types.js";

/** Removes the symlink at root-relative `path` if it still points at `target`; never through a link. */
async function removeLink(beneath: BeneathRoot, path: string, target: string | undefined): Promise<void> {
  const parts = path.split("/");
  const name = parts.pop() as string;
  const dir = await beneath.dir(parts).catch((error: unknown) => {
    // A parent swapped for a link or removed since: what is there now is not the link written.
    if (error instanceof BeneathError) return undefined;
    throw error;
  });
  if (!dir) return;
  const info = await lstat(dir.at(name)).catch(() => undefined);
  if (info?.isSymbolicLink() && (await readlink(dir.at(name))) === target) await unlink(dir.at(name));
}

/**
 * Each symlink was resolved when it was written, but a later entry can change what it leads to (with
 * `s2 -> s1/../..` written first, `s1 -> ../..` next turns s2 into a link to the root's parent), and
 * so can a link that replaced a directory an older link goes through. So once everything is written,
 * every new link is resolved again, and so is every old one (`recheck`) that goes through a new link;
 * a new link that leads outside, or that makes an old one do so, is removed, until none does.
 */
export async function resolveLinksAgain(
  beneath: BeneathRoot,
  links: readonly { path: string; target: string }[],
  recheck: readonly string[],
  result: ExtractResult,
): Promise<void> {
  const ours = new Map(links.map((l) => [l.path, l.target]));
  const remove = async (path: string, reason: string) => {
    const target = ours.get(path);
    ours.delete(path);
    await removeLink(beneath, path, target);
    result.written = result.written.filter((p) => p !== path);
    result.refused.push({ path, reason: `removed again: ${reason}` });
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (const path of [...ours.keys()]) {
      const resolved = await resolveSymlink(beneath, path);
      if (resolved.refusal) {
        await remove(path, resolved.refusal);
        changed = true;
      }
    }
    for (const path of recheck) {
      if (ours.has(path)) continue;
      const resolved = await resolveSymlink(beneath, path);
      if (!resolved.escapes) continue;
      for (const link of resolved.followed.filter((p) => ours.has(p))) {
        await remove(link, `it makes the symlink ${path} point outside the workspace`);
        changed = true;
      }
    }
  }
}
