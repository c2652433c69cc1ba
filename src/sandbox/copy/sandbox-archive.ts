/**
 * The sandbox's copy of the workspace as the engine hands it over: a tar stream of the workdir
 * (Docker's archive API; a pod's `tar -c` over exec). Everything after that (the comparison, the
 * strict extraction) is the same for every engine and trusts nothing in the stream.
 */
import type { Readable } from "node:stream";

/** One read of the archive. */
export interface ArchiveRead {
  stream: Readable;
  /**
   * Rejects when the sandbox's side did not send the whole workspace (a file it could not read would
   * look deleted); awaited once the stream has been read. Absent when the engine has nothing to check.
   */
  check?: (() => Promise<void>) | undefined;
}

export interface SandboxArchive {
  /** Leading part of every name in the stream ("workspace/" for the workdir /workspace). */
  stripPrefix: string;
  /** A fresh tar stream of the workdir; read it at once (nothing awaited in between). */
  open(): Promise<ArchiveRead>;
}
