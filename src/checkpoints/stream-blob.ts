/**
 * A file's content that arrives as a stream (copy mode: from the sandbox's tar), hashed as it goes
 * and stored as a blob only when new: kept in memory up to 8 MiB, beyond that spilled to a temporary
 * file in the run's blob directory, never left half-written.
 */
import { createHash } from "node:crypto";
import { closeSync, openSync, unlinkSync, writeSync } from "node:fs";
import type { BlobStore } from "./blob-store.js";

const IN_MEMORY_BYTES = 8 * 1024 * 1024;

/** Stores `content`; `onChunk` is told each chunk's length first (it throws to stop: a byte budget). */
export async function storeStream(
  store: BlobStore,
  content: AsyncIterable<Buffer>,
  onChunk: (bytes: number) => void,
): Promise<{ sha256: string; size: number }> {
  const hash = createHash("sha256");
  const chunks: Buffer[] = [];
  let size = 0;
  let temp: { path: string; fd: number } | undefined;
  try {
    for await (const chunk of content) {
      size += chunk.length;
      onChunk(chunk.length);
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
}

function writeAll(fd: number, chunk: Buffer): void {
  let at = 0;
  while (at < chunk.length) at += writeSync(fd, chunk, at);
}
