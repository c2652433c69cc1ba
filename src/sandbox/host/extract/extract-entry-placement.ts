import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { lstat, mkdir, open, rename, rmdir, unlink } from "node:fs/promises";
import type { BeneathDir, BeneathRoot } from "../paths/beneath.js";

/**
 * A directory at root-relative `parts` (whose parent `parent` is) with this mode and owner; a file
 * or symlink there is replaced (never followed).
 */
export async function placeDirectory(
  beneath: BeneathRoot,
  parent: BeneathDir,
  parts: readonly string[],
  mode: number,
  owner?: { uid: number; gid: number },
): Promise<void> {
  const name = parts.at(-1) as string;
  const existing = await lstat(parent.at(name)).catch(() => undefined);
  if (existing && !existing.isDirectory()) await unlink(parent.at(name));
  if (!existing?.isDirectory()) await mkdir(parent.at(name), { mode });
  // Opened without following, then changed through its descriptor's magic link: a symlink swapped
  // in at the name after the lstat above is refused, never chmod'ed through (mkdir's mode passes
  // through the umask, hence the chmod).
  const dir = await beneath.dir(parts);
  await dir.chmod(mode);
  if (owner) await dir.chown(owner.uid, owner.gid);
}

/**
 * rename() replaces a file or a symlink itself (never its target). A directory must go first, and
 * only when empty: what is left in it was never copied into the sandbox (ignored, or new on the host).
 * Both names are in `dir`.
 */
export async function replaceWith(dir: BeneathDir, temp: string, name: string): Promise<void> {
  try {
    const existing = await lstat(dir.at(name)).catch(() => undefined);
    if (existing?.isDirectory()) await rmdir(dir.at(name));
    await rename(dir.at(temp), dir.at(name));
  } catch (error) {
    await unlink(dir.at(temp)).catch(() => {});
    throw error;
  }
}

/**
 * Streams the entry into a new file `temp` in `dir` (never an existing one, never through a link);
 * returns its SHA-256.
 */
export async function writeTemp(
  entry: AsyncIterable<unknown>,
  dir: BeneathDir,
  temp: string,
  mode: number,
): Promise<string> {
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  const handle = await open(dir.at(temp), flags, 0o600);
  const hash = createHash("sha256");
  let failed: { error: unknown } | undefined;
  // The entry is read to its end even when a write fails: leaving the loop early would destroy the
  // entry, and the archive's next header, which follows its bytes, would then never come (the
  // extraction waited for it forever on a full disk).
  for await (const chunk of entry) {
    if (failed) continue;
    try {
      // tar-stream entries yield Buffers (streamx types them as unknown).
      const bytes = chunk as Buffer;
      hash.update(bytes);
      await handle.write(bytes);
    } catch (error) {
      failed = { error };
    }
  }
  try {
    if (failed) throw failed.error;
    await handle.chmod(mode);
  } catch (error) {
    await handle.close();
    await unlink(dir.at(temp)).catch(() => {});
    throw error;
  }
  await handle.close();
  return hash.digest("hex");
}

/** The write failed for want of room (or of a working disk), not for anything about the path. */
export function isOutOfSpace(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code === "ENOSPC" || code === "EDQUOT" || code === "EFBIG" || code === "EIO" || code === "EROFS";
}
