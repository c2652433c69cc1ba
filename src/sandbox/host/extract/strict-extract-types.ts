import type { TreeEntry } from "../../copy/tree-diff.js";
import type { BeneathRoot } from "../paths/beneath.js";
import type { Refusal } from "../paths/strict-paths.js";

export interface StrictExtractOptions {
  /** Host directory everything lands in: an absolute real path (no symlinks in it). */
  root: string;
  /** Leading part of every entry name to remove, e.g. "workspace/" from the Docker archive API. */
  stripPrefix?: string | undefined;
  /**
   * Only these paths are written, and each must still match what was reviewed (type, mode,
   * content hash, link target); other entries are passed over. Undefined: every entry.
   */
  expected?: ReadonlyMap<string, TreeEntry> | undefined;
  /** Largest file written. Default 1 GiB. */
  maxFileBytes?: number | undefined;
  /** Most bytes written in total. Default 1 GiB. */
  maxTotalBytes?: number | undefined;
  /**
   * Most entries read (the archive root aside); past it, reading stops with a SandboxError. Default
   * 100,000 (`--copy-max-files`).
   */
  maxEntries?: number | undefined;
  /** Owner for what is written, when harness runs as root (else files belong to whoever runs it). */
  chownTo?: { uid: number; gid: number } | undefined;
  /**
   * Extra policy: a reason to refuse this workspace-relative path, or undefined. `type` is what the
   * entry would put there: "file", "directory" or "symlink".
   */
  refusePath?: ((path: string, type?: string) => string | undefined) | undefined;
  /**
   * Symlinks already in `root` (root-relative) to resolve again at the end: a link written here that
   * makes one of them lead outside the root is removed again and refused.
   */
  recheckLinks?: readonly string[] | undefined;
}

export interface ExtractResult {
  /** Paths written (files, directories, symlinks). */
  written: string[];
  /** Entries refused, by name and reason. */
  refused: Refusal[];
  /** Entries written with a change, e.g. setuid bits stripped. */
  notes: Refusal[];
}

/** Running totals of one extraction. */
export interface ExtractState {
  /** The open root: every path is reached through it, never through a symlink. */
  beneath: BeneathRoot;
  /** Bytes of file content written. */
  total: number;
  /** Symlinks written, with their targets. */
  links: { path: string; target: string }[];
}
