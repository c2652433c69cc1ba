import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pack } from "tar-stream";
import { describe, expect, it } from "vitest";
import { SandboxError } from "../../../../src/errors.js";
import { readSandboxTree } from "../../../../src/sandbox/copy/sandbox-tree.js";
import { strictExtract } from "../../../../src/sandbox/host/extract/strict-extract.js";

/**
 * An archive stream like the engine's: a 1 GiB file whose bytes keep coming as long as they are
 * read, and that stays open until someone destroys it. Left paused and open, the real one kept the
 * container busy, and removing the container hung.
 */
function endlessArchive(): Readable {
  const p = pack();
  const entry = p.entry({ name: "workspace/big", size: 2 ** 30 });
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  const source = new Readable({
    read() {
      // Content is made only as fast as it is read.
      entry.write(chunk);
    },
  });
  p.on("data", (data: unknown) => source.push(data));
  return source;
}

describe("reading the sandbox's archive lets go of it however the read ends", () => {
  it("readSandboxTree destroys the stream when the copy is over the limit", async () => {
    const source = endlessArchive();
    const read = readSandboxTree(source, {
      stripPrefix: "workspace/",
      maxTotalBytes: 1_000_000,
      host: new Map(),
      keepFileBytes: 100,
      keepTotalBytes: 1000,
    });
    await expect(read).rejects.toThrow(SandboxError);
    expect(source.destroyed).toBe(true);
  });

  it("strictExtract destroys the stream when it cannot go on", async () => {
    const base = mkdtempSync(join(tmpdir(), "harness-release-"));
    try {
      const source = endlessArchive();
      await expect(strictExtract(source, { root: join(base, "missing") })).rejects.toThrow();
      expect(source.destroyed).toBe(true);
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });
});
