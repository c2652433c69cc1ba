/**
 * Writes an untrusted tar stream into a host directory, doing by hand the checks node-tar does (a
 * tar-stream extractor has none): see strict-paths.ts for the path rules. Hard links, devices and
 * fifos are refused, setuid/setgid/sticky bits stripped, sizes bounded, files written to a temp
 * file in the same directory (O_EXCL | O_NOFOLLOW) and renamed into place. A refused entry is
 * reported by name and reason and never stops the others; nothing outside `root` is touched.
 */
import { createHash, randomBytes } from "node:crypto";
import { constants } from "node:fs";
import {
  chmod,
  lchown,
  lstat,
  mkdir,
  open,
  readlink,
  rename,
  rmdir,
  symlink,
  unlink,
} from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { Readable } from "node:stream";
import { type Header, extract as tarExtract } from "tar-stream";
import {
  checkParents,
  type Refusal,
  resolveSymlink,
  safeComponents,
  symlinkRefusal,
} from "./strict-paths.js";
import type { TreeEntry } from "./tree-diff.js";

export type { Refusal } from "./strict-paths.js";

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

/** One entry of tar-stream's extract: its header and a stream of its content. */
type TarEntry = AsyncIterable<unknown> & { header: Header };

const GiB = 1024 ** 3;
const SPECIAL = new Set(["character-device", "block-device", "fifo"]);

export async function strictExtract(source: Readable, options: StrictExtractOptions): Promise<ExtractResult> {
  const result: ExtractResult = { written: [], refused: [], notes: [] };
  const refusedPaths: string[] = [];
  const seen = new Set<string>();
  const state: ExtractState = { total: 0, links: [] };
  const extract = tarExtract();
  source.on("error", (error) => extract.destroy(error));
  source.pipe(extract);
  for await (const entry of extract) {
    const name = entry.header.name;
    const prefix = options.stripPrefix ?? "";
    const refuse = (reason: string, path = name) => {
      result.refused.push({ path, reason });
      refusedPaths.push(path);
    };
    if (!`${name}/`.startsWith(prefix)) refuse(`outside ${prefix || "the archive root"}`);
    else {
      const parts = safeComponents(name.slice(prefix.length));
      if (!Array.isArray(parts)) refuse(parts.reason);
      else if (parts.length > 0) {
        const path = parts.join("/");
        const wanted = options.expected?.get(path);
        seen.add(path);
        if (!options.expected || wanted) {
          const refused = await writeEntry(entry, parts, wanted, refusedPaths, state, options, result);
          if (refused) refuse(refused, path);
        }
      }
    }
    // Whatever was not written is read to its end: the next header follows it in the stream.
    await drain(entry);
  }
  for (const path of options.expected?.keys() ?? []) {
    if (!seen.has(path)) result.refused.push({ path, reason: "missing from the sandbox's archive" });
  }
  if (state.links.length > 0)
    await resolveLinksAgain(options.root, state.links, options.recheckLinks ?? [], result);
  return result;
}

/** Running totals of one extraction. */
interface ExtractState {
  /** Bytes of file content written. */
  total: number;
  /** Symlinks written, with their targets. */
  links: { path: string; target: string }[];
}

/**
 * Each symlink was resolved when it was written, but a later entry can change what it leads to (with
 * `s2 -> s1/../..` written first, `s1 -> ../..` next turns s2 into a link to the root's parent), and
 * so can a link that replaced a directory an older link goes through. So once everything is written,
 * every new link is resolved again, and so is every old one (`recheck`) that goes through a new link;
 * a new link that leads outside, or that makes an old one do so, is removed, until none does.
 */
async function resolveLinksAgain(
  root: string,
  links: readonly { path: string; target: string }[],
  recheck: readonly string[],
  result: ExtractResult,
): Promise<void> {
  const ours = new Map(links.map((l) => [l.path, l.target]));
  const remove = async (path: string, reason: string) => {
    const target = ours.get(path);
    ours.delete(path);
    const info = await lstat(join(root, path)).catch(() => undefined);
    if (info?.isSymbolicLink() && (await readlink(join(root, path))) === target)
      await unlink(join(root, path));
    result.written = result.written.filter((p) => p !== path);
    result.refused.push({ path, reason: `removed again: ${reason}` });
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (const path of [...ours.keys()]) {
      const resolved = await resolveSymlink(root, path);
      if (resolved.refusal) {
        await remove(path, resolved.refusal);
        changed = true;
      }
    }
    for (const path of recheck) {
      if (ours.has(path)) continue;
      const resolved = await resolveSymlink(root, path);
      if (!resolved.escapes) continue;
      for (const link of resolved.followed.filter((p) => ours.has(p))) {
        await remove(link, `it makes the symlink ${path} point outside the workspace`);
        changed = true;
      }
    }
  }
}

async function writeEntry(
  entry: TarEntry,
  parts: string[],
  wanted: TreeEntry | undefined,
  refusedPaths: string[],
  state: ExtractState,
  options: StrictExtractOptions,
  result: ExtractResult,
): Promise<string | undefined> {
  const path = parts.join("/");
  const h = entry.header;
  const type = h.type === "contiguous-file" ? "file" : (h.type ?? "file");
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
  const parentProblem = await checkParents(options.root, parts, true);
  if (parentProblem) return parentProblem;
  if (type === "symlink") {
    // After checkParents: the link's parents must exist for `..` to be resolved through them.
    const resolved = await resolveSymlink(options.root, path, h.linkname ?? "");
    if (resolved.refusal) return resolved.refusal;
  }
  const full = join(options.root, ...parts);
  if (((h.mode ?? 0) & 0o7000) !== 0)
    result.notes.push({ path, reason: "setuid/setgid/sticky bits stripped" });
  try {
    if (type === "directory") {
      await placeDirectory(full, mode);
      if (options.chownTo) await lchown(full, options.chownTo.uid, options.chownTo.gid);
    } else {
      const temp = join(
        dirname(full),
        `.${basename(full).slice(0, 64)}.harness-${randomBytes(6).toString("hex")}`,
      );
      if (type === "symlink") await symlink(h.linkname ?? "", temp);
      else {
        state.total += size;
        const sha256 = await writeTemp(entry, temp, mode);
        if (wanted && wanted.sha256 !== sha256) {
          await unlink(temp);
          return "content changed in the sandbox since it was reviewed";
        }
      }
      if (options.chownTo) await lchown(temp, options.chownTo.uid, options.chownTo.gid);
      await replaceWith(temp, full);
      if (type === "symlink") state.links.push({ path, target: h.linkname ?? "" });
    }
  } catch (error) {
    return `could not write: ${(error as Error).message}`;
  }
  result.written.push(path);
  return undefined;
}

/** A directory at `full` with this mode; a file or symlink there is replaced (never followed). */
async function placeDirectory(full: string, mode: number): Promise<void> {
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
async function replaceWith(temp: string, full: string): Promise<void> {
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
async function writeTemp(entry: AsyncIterable<unknown>, temp: string, mode: number): Promise<string> {
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

async function drain(entry: AsyncIterable<unknown>): Promise<void> {
  for await (const _ of entry) {
    // discard
  }
}
