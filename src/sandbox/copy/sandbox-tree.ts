/**
 * Reading the sandbox's copy of the workspace, as the Docker archive API returns it, into a tree
 * that can be compared with the host's. Nothing is written to disk here: files are hashed as they
 * stream by, and small ones are kept in memory for the diff only when they differ from the host.
 * What is held grows with the number of entries and the length of their names, so both are
 * bounded: reading stops as soon as either passes its limit (`--copy-max-files`), before the rest of
 * the archive is even fetched.
 */
import { createHash } from "node:crypto";
import type { Readable } from "node:stream";
import { extract as tarExtract } from "tar-stream";
import { CopyOverLimitError } from "../../errors.js";
import { safeComponents } from "../host/paths/strict-paths.js";
import { SANDBOX_DEFAULTS } from "../sandbox-request.js";
import type { Tree, TreeEntry } from "./tree-diff.js";

/**
 * Characters of names and link targets allowed per entry of the limit, on average: a path is held
 * in the tree, the changes and the summary, and one may be thousands of characters long (deep
 * directories, long names), so a count of entries alone does not bound the memory. Real paths
 * average well under 100.
 */
export const PATH_CHARS_PER_ENTRY = 512;

export interface ReadTreeOptions {
  /** Leading part of every name, e.g. "workspace/". */
  stripPrefix: string;
  /** Content bytes allowed in total; more is a CopyOverLimitError (the copy grew past the limit). */
  maxTotalBytes: number;
  /** Entries allowed (files, directories, symlinks, anything else); more is a CopyOverLimitError. */
  maxEntries?: number | undefined;
  /** The host tree: a file is kept for the diff only when it is new or its hash differs. */
  host: Tree;
  /** Largest file kept for the diff. */
  keepFileBytes: number;
  /** Most bytes kept for diffs in total. */
  keepTotalBytes: number;
  /**
   * Most files kept for diffs. Empty files are never kept (their diff needs no content); without
   * this bound, a few bytes each would still cost a buffer per file.
   */
  keepFiles?: number | undefined;
}

export interface SandboxTree {
  tree: Tree;
  /** Content of changed files small enough to diff, by path. */
  contents: Map<string, Buffer>;
  /** Names the tree leaves out because they are not safe paths (they are refused at apply too). */
  unsafeNames: string[];
  /**
   * Of those, the workspace paths whose name or link target was not UTF-8 as the archive had it (or
   * holds U+FFFD, which is what such a name decodes to): left out of the comparison too, so a host
   * file of that name is not reported deleted.
   */
  undecodable: string[];
}

export async function readSandboxTree(source: Readable, options: ReadTreeOptions): Promise<SandboxTree> {
  try {
    return await readTree(source, options);
  } finally {
    // Stopping early (over the limit) must let go of the engine's archive stream: left open and
    // paused, it keeps the container busy, and removing the container then hangs.
    source.destroy();
  }
}

async function readTree(source: Readable, options: ReadTreeOptions): Promise<SandboxTree> {
  const result: SandboxTree = { tree: new Map(), contents: new Map(), unsafeNames: [], undecodable: [] };
  const maxEntries = options.maxEntries ?? SANDBOX_DEFAULTS.copyMaxFiles;
  const keepFiles = options.keepFiles ?? 1000;
  let total = 0;
  let kept = 0;
  let entries = 0;
  let pathChars = 0;
  const extract = tarExtract();
  source.on("error", (error) => extract.destroy(error));
  source.pipe(extract);
  let prefix = options.stripPrefix;
  let first = true;
  for await (const entry of extract) {
    const h = entry.header;
    // Podman 4.3 names a stopped container's volume "/" (then "/a.txt", ...), not "workspace/":
    // the first entry says which naming the whole archive uses.
    if (first && h.name === "/" && h.type === "directory") prefix = "/";
    first = false;
    // The workspace directory itself is not an entry of the copy (the scan does not count it either).
    if (h.name !== prefix && `${h.name}/` !== prefix && ++entries > maxEntries) {
      throw new CopyOverLimitError(
        `the sandbox's workspace holds more than ${maxEntries} files, directories and symlinks, over --copy-max-files; nothing was applied`,
      );
    }
    pathChars += h.name.length + (h.linkname?.length ?? 0);
    if (pathChars > maxEntries * PATH_CHARS_PER_ENTRY) {
      throw new CopyOverLimitError(
        `the sandbox's workspace names paths of more than ${maxEntries * PATH_CHARS_PER_ENTRY} characters in all (${PATH_CHARS_PER_ENTRY} per entry of --copy-max-files); nothing was applied`,
      );
    }
    const parts = h.name.startsWith(prefix) ? safeComponents(h.name.slice(prefix.length)) : undefined;
    // tar-stream decodes names as UTF-8: a name the sandbox made that is not UTF-8 arrives with
    // U+FFFD, which would name another file on the host. Never applied, like an unsafe path.
    const undecodable = h.name.includes("\ufffd") || (h.linkname ?? "").includes("\ufffd");
    if (undecodable && Array.isArray(parts)) result.undecodable.push(parts.join("/"));
    const path = Array.isArray(parts) && !undecodable ? parts.join("/") : undefined;
    const hash = createHash("sha256");
    const chunks: Buffer[] = [];
    const keep =
      h.type === "file" &&
      h.size > 0 &&
      h.size <= options.keepFileBytes &&
      kept + h.size <= options.keepTotalBytes &&
      result.contents.size < keepFiles;
    for await (const chunk of entry) {
      const bytes = chunk as Buffer;
      total += bytes.length;
      if (total > options.maxTotalBytes) {
        throw new CopyOverLimitError(
          `the sandbox's workspace holds more than the copy limit (${options.maxTotalBytes} bytes); nothing was applied`,
        );
      }
      hash.update(bytes);
      if (keep) chunks.push(bytes);
    }
    if (path === undefined) {
      if (h.name !== prefix && `${h.name}/` !== prefix) result.unsafeNames.push(h.name);
      continue;
    }
    if (path === "") continue;
    const entryOut: TreeEntry = {
      type: h.type === "contiguous-file" ? "file" : h.type,
      mode: h.mode & 0o777,
      size: h.size,
    };
    if (h.type === "file") entryOut.sha256 = hash.digest("hex");
    if (h.type === "symlink") entryOut.linkname = h.linkname;
    if (h.type === "link") {
      // Docker archives a second name of a file as a hard link to the first: same content.
      const target = safeComponents(h.linkname.slice(prefix.length));
      const linked = Array.isArray(target) ? result.tree.get(target.join("/")) : undefined;
      Object.assign(entryOut, { type: "file", size: linked?.size ?? 0, sha256: linked?.sha256 });
      entryOut.hardLinkTo = Array.isArray(target) ? target.join("/") : h.linkname;
    }
    result.tree.set(path, entryOut);
    const before = options.host.get(path);
    if (keep && (before?.type !== "file" || before.sha256 !== entryOut.sha256)) {
      result.contents.set(path, Buffer.concat(chunks));
      kept += h.size;
    }
  }
  return result;
}
