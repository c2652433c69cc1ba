/**
 * Removes shared blobs no run holds any more: each run keeps a hard link to every blob it refers to,
 * so a blob whose link count is 1 is the shared store's alone. A blob being stored gets its run's
 * link before the shared one (blob-store.ts), so a sweep running beside a run never takes it.
 * Never throws: what cannot be listed or removed stays for the next sweep.
 */
import { lstatSync, readdirSync, rmdirSync, unlinkSync } from "node:fs";
import { join } from "node:path";

/** Blobs removed and their bytes. */
export function sweepSharedBlobs(sharedDir: string): { removed: number; bytes: number } {
  const result = { removed: 0, bytes: 0 };
  for (const fan of listOrEmpty(sharedDir)) {
    const dir = join(sharedDir, fan);
    for (const name of listOrEmpty(dir)) {
      try {
        const path = join(dir, name);
        const info = lstatSync(path);
        if (!info.isFile() || info.nlink > 1) continue;
        unlinkSync(path);
        result.removed += 1;
        result.bytes += info.size;
      } catch {
        // Gone already, or not ours to remove: left for the next sweep.
      }
    }
    try {
      rmdirSync(dir);
    } catch {
      // Not empty: it still holds blobs.
    }
  }
  return result;
}

function listOrEmpty(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
