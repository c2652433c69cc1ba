/**
 * One checkpoint of copy mode's workspace: the sandbox's copy, read entry by entry from the engine's
 * archive (CopiedWorkspace.entries). An archive has no inode or ctime to tell an unchanged file by,
 * so every file's content is hashed as it streams by (and stored only when new); the result is the
 * same manifest the host walk gives, compared with the previous one the same way. Entries are data:
 * names were checked safe by the reader, links are kept as their text, other kinds are left out.
 */
import type { WorkspaceEntry } from "../sandbox/sandbox.js";
import type { BlobStore } from "./blob-store.js";
import type { CheckpointEntry, Manifest, SkippedPath, SnapshotLimits } from "./checkpoint-types.js";
import { compareManifests, type Snapshot } from "./snapshot.js";
import { storeStream } from "./stream-blob.js";

export interface EntriesSnapshotInput {
  entries: AsyncIterable<WorkspaceEntry>;
  previous: Manifest;
  store: BlobStore;
  limits: SnapshotLimits;
  ignored?: (path: string, isDirectory: boolean) => boolean;
}

class GiveUp extends Error {}

export async function takeEntriesSnapshot(input: EntriesSnapshotInput): Promise<Snapshot> {
  const { store, limits } = input;
  const manifest: Manifest = new Map();
  const skipped: SkippedPath[] = [];
  let count = 0;
  let bytesRead = 0;
  const deadline = Date.now() + limits.maxMs;

  const storeContent = (content: AsyncIterable<Buffer>) =>
    storeStream(store, content, (bytes) => {
      bytesRead += bytes;
      if (bytesRead > limits.maxReadBytes)
        throw new GiveUp(`more than ${limits.maxReadBytes} bytes of files to read`);
    });

  try {
    for await (const e of input.entries) {
      count += 1;
      if (count > limits.maxEntries) throw new GiveUp(`more than ${limits.maxEntries} files and directories`);
      if (Date.now() > deadline) throw new GiveUp(`the snapshot took longer than ${limits.maxMs / 1000} s`);
      if (input.ignored?.(e.path, e.type === "directory")) continue;
      const base: CheckpointEntry = {
        type: "file",
        mode: e.mode,
        size: 0,
        mtimeMs: e.mtimeMs,
        ctimeMs: 0,
        ino: 0,
      };
      if (e.type === "directory") manifest.set(e.path, { ...base, type: "directory" });
      else if (e.type === "symlink")
        manifest.set(e.path, { ...base, type: "symlink", linkname: e.linkname ?? "" });
      else if (e.type === "file" && e.content !== undefined) {
        const { sha256, size } = await storeContent(e.content);
        manifest.set(e.path, { ...base, size, sha256 });
      } else if (
        e.type === "hard link" &&
        e.linkname !== undefined &&
        manifest.get(e.linkname)?.type === "file"
      ) {
        // Another name of an earlier file: the same content.
        const earlier = manifest.get(e.linkname) as CheckpointEntry;
        manifest.set(e.path, { ...earlier, mode: e.mode, mtimeMs: e.mtimeMs });
      } else skipped.push({ path: e.path, reason: e.type });
    }
  } catch (error) {
    const reason =
      error instanceof GiveUp
        ? error.message
        : `the sandbox's copy could not be read (${(error as Error).message})`;
    return { delta: {}, counts: { added: 0, changed: 0, removed: 0 }, skipped, gaveUp: reason, bytesRead };
  }
  const { delta, counts } = compareManifests(input.previous, manifest);
  return { manifest, delta, counts, skipped, bytesRead };
}
