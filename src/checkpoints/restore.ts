/**
 * Writes a checkpoint's manifest into a new or empty directory. Every parent is reached through
 * beneath.ts (never through a symlink, not even one this restore just wrote), files are created with
 * O_EXCL | O_NOFOLLOW, symlinks are written as the text they held and never followed, and set-id
 * bits were never recorded. Directory modes are set last, deepest first, so a read-only directory
 * does not stop its own children being written. What restore-policy.ts leaves out is not written.
 */
import { constants } from "node:fs";
import { lchown, mkdir, open, readdir, symlink } from "node:fs/promises";
import { withBeneath } from "../sandbox/host/paths/beneath.js";
import { readBlob } from "./blob-store.js";
import type { CheckpointEntry, Manifest } from "./checkpoint-types.js";

export interface RestoreOptions {
  /** Run's checkpoints directory: where the blobs are read. */
  checkpointsDir: string;
  /** Owner to give everything written (only applied when running as root). */
  owner?: { uid: number; gid: number } | undefined;
  /** Paths not written, with everything below them (restore-policy.ts). */
  withheld?: readonly string[] | undefined;
  /** Paths written with another entry than the manifest's (as the run found them, restore-policy.ts). */
  replaced?: ReadonlyMap<string, CheckpointEntry> | undefined;
}

export interface RestoreResult {
  files: number;
  directories: number;
  symlinks: number;
  bytes: number;
}

/** Throws when `dir` exists and is not an empty directory. */
export async function prepareTarget(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const names = await readdir(dir);
  if (names.length > 0) throw new Error(`${dir} is not empty: restore writes into a new or empty directory`);
}

export async function restoreManifest(
  manifest: Manifest,
  dir: string,
  options: RestoreOptions,
): Promise<RestoreResult> {
  const result: RestoreResult = { files: 0, directories: 0, symlinks: 0, bytes: 0 };
  const owner = process.getuid?.() === 0 ? options.owner : undefined;
  const directories: { parts: string[]; mode: number }[] = [];
  const withheld = options.withheld ?? [];
  await withBeneath(dir, async (beneath) => {
    for (const [path, recorded] of manifest) {
      const entry = options.replaced?.get(path) ?? recorded;
      if (!options.replaced?.has(path) && withheld.some((w) => path === w || path.startsWith(`${w}/`)))
        continue;
      const parts = path.split("/");
      const name = parts.pop() as string;
      const parent = await beneath.dir(parts);
      const at = parent.at(name);
      if (entry.type === "directory") {
        await mkdir(at, { mode: 0o700 });
        directories.push({ parts: [...parts, name], mode: entry.mode });
        result.directories += 1;
      } else if (entry.type === "symlink") {
        await symlink(entry.linkname ?? "", at);
        if (owner !== undefined) await lchown(at, owner.uid, owner.gid);
        result.symlinks += 1;
      } else {
        const content = readBlob(options.checkpointsDir, entry.sha256 ?? "");
        const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
        const handle = await open(at, flags, 0o600);
        try {
          await handle.writeFile(content);
          await handle.chmod(entry.mode);
          if (owner !== undefined) await handle.chown(owner.uid, owner.gid);
          const mtime = new Date(entry.mtimeMs);
          await handle.utimes(mtime, mtime);
        } finally {
          await handle.close();
        }
        result.files += 1;
        result.bytes += content.length;
      }
    }
    for (const { parts, mode } of directories.reverse()) {
      const opened = await beneath.dir(parts);
      if (owner !== undefined) await opened.chown(owner.uid, owner.gid);
      await opened.chmod(mode);
    }
    if (owner !== undefined) await (await beneath.dir([])).chown(owner.uid, owner.gid);
  });
  return result;
}
