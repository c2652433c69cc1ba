/**
 * Content-addressed blobs for one run's checkpoints. A blob is written once into the run's own
 * `blobs/` (temporary name, then rename) and then hard-linked into the shared store; a blob the
 * shared store has already is only hard-linked into the run. So a file unchanged across steps and
 * runs is stored once, and the run's link keeps it alive until the run is removed.
 *
 * Order matters against a concurrent sweep (blob-sweep.ts removes shared blobs with one link): a new
 * blob has the run's link before it gets the shared one, and a shared blob that vanishes between
 * the check and the link is written anew.
 */
import { randomBytes } from "node:crypto";
import {
  closeSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { dirname, join } from "node:path";
import { blobRelPath } from "./checkpoint-paths.js";

/**
 * The store could not be written (a full disk, a read-only state directory): not a file of the
 * workspace that could not be read, so the snapshot stops rather than skipping the file. Its message
 * names the path.
 */
export class StoreWriteError extends Error {
  override readonly name = "StoreWriteError";
  constructor(
    readonly path: string,
    cause: unknown,
  ) {
    super(
      `${path} could not be written (${(cause as NodeJS.ErrnoException).code ?? (cause as Error).message})`,
      {
        cause,
      },
    );
  }
}

/** Runs `write`, turning what it throws into a `StoreWriteError` naming `path`. */
export function writingTo<T>(path: string, write: () => T): T {
  try {
    return write();
  } catch (error) {
    if (error instanceof StoreWriteError) throw error;
    throw new StoreWriteError(path, error);
  }
}

export class BlobStore {
  /** Blobs this run is known to hold, so each is checked on disk once. */
  private readonly held = new Set<string>();
  /** Directories known to exist. */
  private readonly dirs = new Set<string>();
  /** Bytes of blobs written by this store (not linked from the shared store). */
  bytesWritten = 0;

  constructor(
    /** `<state>/checkpoints/blobs`. */
    private readonly sharedDir: string,
    /** `<run>.checkpoints/blobs`. */
    private readonly runDir: string,
  ) {}

  /** True when the run holds blob `sha256`, linking it from the shared store when that has it. */
  adopt(sha256: string): boolean {
    if (this.held.has(sha256)) return true;
    const own = join(this.runDir, blobRelPath(sha256));
    try {
      this.ensureDir(dirname(own));
      linkSync(join(this.sharedDir, blobRelPath(sha256)), own);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // ENOENT: the shared store lacks it; EXDEV or EPERM (no hard links): written in full.
      if (code !== "EEXIST") return false;
    }
    this.held.add(sha256);
    return true;
  }

  /** mkdir -p once per directory this store writes in. */
  private ensureDir(dir: string): void {
    if (this.dirs.has(dir)) return;
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    this.dirs.add(dir);
  }

  /** Stores `content` (whose hash is `sha256`) unless the run holds it already. */
  put(sha256: string, content: Buffer): void {
    if (this.adopt(sha256)) return;
    // Written under a temporary name: a blob under its real name is always whole.
    const temp = this.tempPath();
    writingTo(temp, () => {
      const fd = openSync(temp, "wx", 0o600);
      try {
        let at = 0;
        while (at < content.length) at += writeSync(fd, content, at);
      } catch (error) {
        // Nothing half-written stays behind, not even under its temporary name.
        closeSync(fd);
        unlinkSync(temp);
        throw error;
      }
      closeSync(fd);
    });
    this.settle(temp, sha256, content.length);
  }

  /** A new temporary file in the run's blob directory, for content streamed before its hash is known. */
  tempPath(): string {
    writingTo(this.runDir, () => this.ensureDir(this.runDir));
    return join(this.runDir, `tmp-${process.pid}-${randomBytes(6).toString("hex")}`);
  }

  /** Moves a temporary file holding blob `sha256` into place (or drops it when the run holds it). */
  settle(temp: string, sha256: string, bytes: number): void {
    if (this.adopt(sha256)) {
      unlinkSync(temp);
      return;
    }
    const own = join(this.runDir, blobRelPath(sha256));
    writingTo(own, () => {
      this.ensureDir(dirname(own));
      renameSync(temp, own);
    });
    this.held.add(sha256);
    this.bytesWritten += bytes;
    const shared = join(this.sharedDir, blobRelPath(sha256));
    try {
      this.ensureDir(dirname(shared));
      linkSync(own, shared);
    } catch {
      // Already there (another run stored it meanwhile) or no hard links: the run's copy suffices.
    }
  }
}

/** Reads blob `sha256` from a run's checkpoints directory. */
export function readBlob(runCheckpointsDir: string, sha256: string): Buffer {
  if (!/^[0-9a-f]{64}$/.test(sha256)) throw new Error(`not a blob name: ${JSON.stringify(sha256)}`);
  return readFileSync(join(runCheckpointsDir, "blobs", blobRelPath(sha256)));
}
