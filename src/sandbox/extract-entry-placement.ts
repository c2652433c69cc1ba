import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { chmod, lstat, mkdir, open, rename, rmdir, unlink } from "node:fs/promises";

/** A directory at `full` with this mode; a file or symlink there is replaced (never followed). */
export async function placeDirectory(full: string, mode: number): Promise<void> {
  const existing = await lstat(full).catch(() => undefined);
  if (existing && !existing.isDirectory()) await unlink(full);
  if (!existing?.isDirectory()) await mkdir(full, { mode });
  // mkdir's mode passes through the umask; lstat above showed this is a real directory.
  await chmod(full, mode);
}

/**
 * rename() replaces a file or a symlink itself (never its target). A directory must go first, and
 * only when empty: what is left in it was never copied into the sandbox (ignored, or new on the host).
 */
export async function replaceWith(temp: string, full: string): Promise<void> {
  try {
    const existing = await lstat(full).catch(() => undefined);
    if (existing?.isDirectory()) await rmdir(full);
    await rename(temp, full);
  } catch (error) {
    await unlink(temp).catch(() => {});
    throw error;
  }
}

/** Streams the entry into a new file (never an existing one, never through a link); returns its SHA-256. */
export async function writeTemp(entry: AsyncIterable<unknown>, temp: string, mode: number): Promise<string> {
  const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;
  const handle = await open(temp, flags, 0o600);
  const hash = createHash("sha256");
  try {
    for await (const chunk of entry) {
      // tar-stream entries yield Buffers (streamx types them as unknown).
      const bytes = chunk as Buffer;
      hash.update(bytes);
      await handle.write(bytes);
    }
    await handle.chmod(mode);
  } catch (error) {
    await handle.close();
    await unlink(temp).catch(() => {});
    throw error;
  }
  await handle.close();
  return hash.digest("hex");
}
