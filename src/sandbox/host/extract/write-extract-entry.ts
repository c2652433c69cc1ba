import { randomBytes } from "node:crypto";
import { lchown, symlink, unlink } from "node:fs/promises";
import type { Header } from "tar-stream";
import type { TreeEntry } from "../../copy/tree-diff.js";
import { checkParents, resolveSymlink, symlinkRefusal } from "../paths/strict-paths.js";
import { placeDirectory, replaceWith, writeTemp } from "./extract-entry-placement.js";
import type { ExtractResult, ExtractState, StrictExtractOptions } from "./strict-extract-types.js";

/** One entry of tar-stream's extract: its header and a stream of its content. */
export type TarEntry = AsyncIterable<unknown> & { header: Header };

const GiB = 1024 ** 3;
const SPECIAL = new Set(["character-device", "block-device", "fifo"]);

/** The entry's type as written: "file", "directory", "symlink", or one that is refused. */
export function entryType(h: Header): string {
  return h.type === "contiguous-file" ? "file" : (h.type ?? "file");
}

/**
 * Why the entry is refused on what its header says and what was reviewed (path policy, type, mode,
 * link text, sizes), before anything is written; undefined when it may be written.
 */
export function checkEntry(
  h: Header,
  parts: string[],
  wanted: TreeEntry | undefined,
  refusedPaths: readonly string[],
  state: ExtractState,
  options: StrictExtractOptions,
): string | undefined {
  const path = parts.join("/");
  const type = entryType(h);
  const inside = refusedPaths.find((d) => path.startsWith(`${d}/`));
  if (inside) return `inside ${inside}, which was refused`;
  const policy = options.refusePath?.(path, type);
  if (policy) return policy;
  if (type === "link") return `hard link (to ${h.linkname ?? "?"}) is never created`;
  if (SPECIAL.has(type)) return `${type} entries are never created`;
  if (type !== "file" && type !== "directory" && type !== "symlink") {
    return `unsupported entry type ${type}`;
  }
  const mode = (h.mode ?? 0o644) & 0o777;
  if (wanted && (wanted.type !== type || (type !== "symlink" && wanted.mode !== mode))) {
    return "changed in the sandbox since it was reviewed";
  }
  if (type === "symlink") {
    const linkname = h.linkname ?? "";
    const why = symlinkRefusal(path, linkname);
    if (why) return why;
    if (wanted && wanted.linkname !== linkname) return "changed in the sandbox since it was reviewed";
  }
  const size = h.size ?? 0;
  const maxFile = options.maxFileBytes ?? GiB;
  if (size > maxFile) return `file too large (${size} bytes, limit ${maxFile})`;
  if (state.total + size > (options.maxTotalBytes ?? GiB)) {
    return `total size limit reached (${options.maxTotalBytes ?? GiB} bytes)`;
  }
  return undefined;
}

export async function writeEntry(
  entry: TarEntry,
  parts: string[],
  wanted: TreeEntry | undefined,
  refusedPaths: string[],
  state: ExtractState,
  options: StrictExtractOptions,
  result: ExtractResult,
): Promise<string | undefined> {
  const h = entry.header;
  const refused = checkEntry(h, parts, wanted, refusedPaths, state, options);
  if (refused) return refused;
  const path = parts.join("/");
  const type = entryType(h);
  const mode = (h.mode ?? 0o644) & 0o777;
  const size = h.size ?? 0;
  const { beneath } = state;
  let parent = await checkParents(beneath, parts, true);
  if (typeof parent === "string") return parent;
  if (type === "symlink") {
    // After checkParents: the link's parents must exist for `..` to be resolved through them.
    const resolved = await resolveSymlink(beneath, path, h.linkname ?? "");
    if (resolved.refusal) return resolved.refusal;
    // Resolving walked other directories: reach the parent again, through the same checks.
    parent = await checkParents(beneath, parts, true);
    if (typeof parent === "string") return parent;
  }
  // Every name below is in `parent`, the directory just checked, whatever is swapped in at its path.
  const name = parts.at(-1) as string;
  if (((h.mode ?? 0) & 0o7000) !== 0)
    result.notes.push({ path, reason: "setuid/setgid/sticky bits stripped" });
  try {
    if (type === "directory") {
      await placeDirectory(beneath, parent, parts, mode, options.chownTo);
    } else {
      const temp = `.${name.slice(0, 64)}.harness-${randomBytes(6).toString("hex")}`;
      if (type === "symlink") await symlink(h.linkname ?? "", parent.at(temp));
      else {
        state.total += size;
        const sha256 = await writeTemp(entry, parent, temp, mode);
        if (wanted && wanted.sha256 !== sha256) {
          await unlink(parent.at(temp));
          return "content changed in the sandbox since it was reviewed";
        }
      }
      if (options.chownTo) await lchown(parent.at(temp), options.chownTo.uid, options.chownTo.gid);
      await replaceWith(parent, temp, name);
      if (type === "symlink") state.links.push({ path, target: h.linkname ?? "" });
    }
  } catch (error) {
    return `could not write: ${beneath.explain((error as Error).message)}`;
  }
  result.written.push(path);
  return undefined;
}
