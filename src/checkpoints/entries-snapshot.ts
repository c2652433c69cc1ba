/**
 * One checkpoint of copy mode's workspace: the sandbox's copy, read entry by entry from the engine's
 * archive (CopiedWorkspace.entries). An archive has no inode or ctime to tell an unchanged file by,
 * so every file's content is hashed as it streams by (and stored only when new); the result is the
 * same manifest the host walk gives, compared with the previous one the same way. Entries are data:
 * names were checked safe by the reader, links are kept as their text, other kinds are left out.
 */
import { createHash } from "node:crypto";
import { closeSync, openSync, unlinkSync, writeSync } from "node:fs";
import type { WorkspaceEntry } from "../sandbox/sandbox.js";
import type { BlobStore } from "./blob-store.js";
import type { CheckpointEntry, Manifest, SkippedPath, SnapshotLimits } from "./checkpoint-types.js";
import { compareManifests, type Snapshot } from "./snapshot.js";

const IN_MEMORY_BYTES = 8 * 1024 * 1024;

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

  const storeContent = async (content: AsyncIterable<Buffer>): Promise<{ sha256: string; size: number }> => {
    const hash = createHash("sha256");
    const chunks: Buffer[] = [];
    let size = 0;
    let temp: { path: string; fd: number } | undefined;
    try {
      for await (const chunk of content) {
        size += chunk.length;
        bytesRead += chunk.length;
        if (bytesRead > limits.maxReadBytes)
          throw new GiveUp(`more than ${limits.maxReadBytes} bytes of files to read`);
        hash.update(chunk);
        if (temp === undefined && size <= IN_MEMORY_BYTES) {
          chunks.push(chunk);
          continue;
        }
        if (temp === undefined) {
          const path = store.tempPath();
          temp = { path, fd: openSync(path, "wx", 0o600) };
          for (const held of chunks) writeAll(temp.fd, held);
          chunks.length = 0;
        }
        writeAll(temp.fd, chunk);
      }
      const sha256 = hash.digest("hex");
      if (temp === undefined) store.put(sha256, Buffer.concat(chunks, size));
      else {
        closeSync(temp.fd);
        store.settle(temp.path, sha256, size);
        temp = undefined;
      }
      return { sha256, size };
    } finally {
      if (temp !== undefined) {
        closeSync(temp.fd);
        unlinkSync(temp.path);
      }
    }
  };

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

function writeAll(fd: number, chunk: Buffer): void {
  let at = 0;
  while (at < chunk.length) at += writeSync(fd, chunk, at);
}
