/** What the checkpoint benches count as stored: every file under some folders, each inode once. */
import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";

/**
 * Bytes of every file under `dirs`, each inode once wherever it is linked (blobs are shared):
 * `"size"` counts their lengths, `"disk"` the blocks they take (a 20-byte blob takes 4 KiB).
 */
export function storedBytes(dirs: readonly string[], measure: "size" | "disk" = "size"): number {
  let bytes = 0;
  const seen = new Set<number>();
  const walk = (at: string) => {
    for (const entry of readdirSync(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) walk(path);
      else {
        const info = lstatSync(path);
        if (!seen.has(info.ino)) bytes += measure === "disk" ? info.blocks * 512 : info.size;
        seen.add(info.ino);
      }
    }
  };
  for (const dir of dirs) {
    try {
      walk(dir);
    } catch {
      // Nothing stored yet.
    }
  }
  return bytes;
}
