/**
 * Copy mode's snapshots at the cost of what changed (issue 34): each step lists the sandbox's copy
 * with lstat (CopiedWorkspace.list: one exec, nothing read), compares each regular file's size,
 * mtime, ctime, inode and mode with what they were when its content was last read, and fetches only
 * the files that differ (CopiedWorkspace.fetch: one exec, a tar of those files). Directories and
 * symlinks come whole from the listing. What git ignores is left out as in bind mode
 * (listing-ignore.ts), and the ignored directories are not even walked at the next step.
 *
 * What a listing cannot see: a write that leaves size, mtime, ctime and inode as they were. ctime
 * cannot be set back from user space (`touch -d` moves it), so that takes a write within one tick of
 * the clock after the listing read the file: such a "racy" file (changed less than RACY_NS before
 * the listing began) is read again at the next step, as git does. A write through mmap may update
 * the times late; every `verifyEvery` steps, and at the first, every file is fetched and hashed
 * whatever its lstat says (the full verification), which catches it there at the latest.
 *
 * An image whose listing cannot run at the first step (no python3: `--image` allows it) is read as
 * before issue 34, through the engine's archive at every step (entries-snapshot.ts), everything kept.
 */
import type { CopiedWorkspace, CopyListing, ListedPath } from "../sandbox/sandbox.js";
import type { CheckpointEntry, Manifest, SkippedPath } from "./checkpoint-types.js";
import { takeEntriesSnapshot } from "./entries-snapshot.js";
import type { RuleSet } from "./git-ignore.js";
import { applyIgnoreRules, type ListingView } from "./listing-ignore.js";
import type { SnapshotFn } from "./run-checkpointer.js";
import { compareManifests, type Snapshot } from "./snapshot.js";
import { storeStream } from "./stream-blob.js";

/** File times come from a coarse clock (a few ms per tick); this is well above any tick. */
const RACY_MS = 100;
/** Steps between two full verifications (every file fetched and hashed). */
export const VERIFY_EVERY = 50;

export interface CopySnapshotOptions {
  /** git's ignore rules (the user's global excludes); absent (`--checkpoints all`): none apply. */
  gitIgnore?: { global?: RuleSet | undefined } | undefined;
  /** Steps between full verifications (default VERIFY_EVERY). */
  verifyEvery?: number;
  /** How recent a change makes a file racy, in ms (default RACY_MS; tests set 0). */
  racyMs?: number;
}

class GiveUp extends Error {}

/** `entries`: the engine's archive, for an image whose listing cannot run (no python3). */
type Copy = Pick<CopiedWorkspace, "list" | "fetch"> & Partial<Pick<CopiedWorkspace, "entries">>;

export function copySnapshots(copy: Copy, options: CopySnapshotOptions = {}): SnapshotFn {
  const verifyEvery = options.verifyEvery ?? VERIFY_EVERY;
  const racyMs = options.racyMs ?? RACY_MS;
  /** Path → its lstat key when the manifest's content for it was read (files only, not racy ones). */
  let index = new Map<string, string>();
  /** The ignored directories the last view found: not walked by the next listing. */
  let prune: string[] = [];
  /** Ignore files' content by path, with the lstat key it was read at. */
  const ignoreFiles = new Map<string, { key: string; content: Buffer }>();
  let sinceFull = Number.POSITIVE_INFINITY;
  /** A listing has worked once; until then a listing that cannot run means the archive, as before. */
  let listed = false;
  let archiveOnly = false;

  return async (previous, store, limits): Promise<Snapshot> => {
    if (archiveOnly && copy.entries !== undefined)
      return takeEntriesSnapshot({ entries: copy.entries(), previous, store, limits });
    const full = sinceFull >= verifyEvery;
    const deadline = Date.now() + limits.maxMs;
    let bytesRead = 0;
    const skipped: SkippedPath[] = [];
    const onChunk = (bytes: number) => {
      bytesRead += bytes;
      if (bytesRead > limits.maxReadBytes)
        throw new GiveUp(`more than ${limits.maxReadBytes} bytes of ${full ? "" : "changed "}files to read`);
    };
    const listOnce = async (without: readonly string[]): Promise<CopyListing> => {
      const listing = await copy.list(without, limits.maxEntries);
      if (!listing.complete) throw new GiveUp(`more than ${limits.maxEntries} files and directories`);
      return listing;
    };
    const fetchIgnoreFiles = async (needs: readonly ListedPath[]) => {
      const wanted = new Map(needs.map((entry) => [entry.path, entry]));
      for await (const e of copy.fetch([...wanted.keys()])) {
        const entry = wanted.get(e.path);
        if (entry === undefined || e.content === undefined) continue;
        const chunks: Buffer[] = [];
        for await (const chunk of e.content) {
          onChunk(chunk.length);
          chunks.push(chunk);
        }
        ignoreFiles.set(e.path, { key: entry.key, content: Buffer.concat(chunks) });
        wanted.delete(e.path);
      }
      // Not a regular file any more: no rules from it this step (the next listing says what it is).
      for (const path of wanted.keys()) ignoreFiles.set(path, { key: "gone", content: Buffer.alloc(0) });
    };

    try {
      const pruned = full ? [] : prune;
      let listing = await listOnce(pruned);
      listed = true;
      const evaluate = () =>
        applyIgnoreRules(listing, options.gitIgnore, (entry) => {
          const held = ignoreFiles.get(entry.path);
          return held !== undefined && (held.key === entry.key || held.key === "gone")
            ? held.content
            : "need";
        });
      let view: ListingView = evaluate();
      for (let round = 0; view.needs.length > 0 && round < 64; round++) {
        await fetchIgnoreFiles(view.needs);
        view = evaluate();
      }
      for (const entry of view.needs) ignoreFiles.delete(entry.path);
      const kept = new Set(view.kept.map((entry) => entry.path));
      if (pruned.some((path) => kept.has(path))) {
        // An ignore rule changed and a directory the listing did not walk is no longer ignored:
        // list everything once more, so nothing it holds looks deleted.
        listing = await listOnce([]);
        view = evaluate();
        for (let round = 0; view.needs.length > 0 && round < 64; round++) {
          await fetchIgnoreFiles(view.needs);
          view = evaluate();
        }
      }
      for (const [path, held] of ignoreFiles) if (held.key === "gone") ignoreFiles.delete(path);
      skipped.push(...listing.skipped, ...view.skipped);

      const manifest: Manifest = new Map();
      const nextIndex = new Map<string, string>();
      const toFetch = new Map<string, ListedPath>();
      for (const entry of view.kept) {
        const before = previous.get(entry.path);
        if (
          before !== undefined &&
          index.get(entry.path) === entry.key &&
          !(full && before.type === "file")
        ) {
          // lstat saw nothing change since this entry was taken: the same object, no work.
          manifest.set(entry.path, before);
          nextIndex.set(entry.path, entry.key);
          continue;
        }
        const base: CheckpointEntry = {
          type: "file",
          mode: entry.mode,
          size: 0,
          mtimeMs: entry.mtimeMs,
          ctimeMs: 0,
          ino: 0,
        };
        if (entry.kind === "directory") {
          manifest.set(entry.path, { ...base, type: "directory" });
          nextIndex.set(entry.path, entry.key);
        } else if (entry.kind === "symlink") {
          manifest.set(entry.path, { ...base, type: "symlink", linkname: entry.detail });
          nextIndex.set(entry.path, entry.key);
        } else if (entry.kind === "unreadable")
          skipped.push({ path: entry.path, reason: `unreadable directory (${entry.detail})` });
        else if (entry.kind === "other") skipped.push({ path: entry.path, reason: entry.detail });
        else {
          // Its place in the manifest now (parents first); its entry once read.
          manifest.set(entry.path, base);
          toFetch.set(entry.path, entry);
        }
      }

      const read = new Set<string>();
      for await (const e of copy.fetch([...toFetch.keys()])) {
        const entry = toFetch.get(e.path);
        if (entry === undefined || e.content === undefined || read.has(e.path)) continue;
        if (Date.now() > deadline) throw new GiveUp(`the snapshot took longer than ${limits.maxMs / 1000} s`);
        const { sha256, size } = await storeStream(store, e.content, onChunk);
        read.add(e.path);
        manifest.set(e.path, { ...(manifest.get(e.path) as CheckpointEntry), size, sha256 });
        // Changed just before the listing began: a write in the same tick would not show; read it again.
        if (entry.ctimeMs < listing.startedMs - racyMs) nextIndex.set(e.path, entry.key);
      }
      for (const path of toFetch.keys()) {
        if (read.has(path)) continue;
        // No longer a regular file (a link, a fifo, gone) or changed while read: the previous entry
        // stands until the next listing says what it is now.
        skipped.push({ path, reason: "changed while read" });
        const before = previous.get(path);
        if (before === undefined) manifest.delete(path);
        else manifest.set(path, before);
      }
      index = nextIndex;
      prune = view.prune;
      sinceFull = full ? 1 : sinceFull + 1;
      const { delta, counts } = compareManifests(previous, manifest);
      return {
        manifest,
        delta,
        counts,
        skipped,
        bytesRead,
        ...(view.ignored === undefined ? {} : { ignored: view.ignored }),
      };
    } catch (error) {
      // The next snapshot starts over from a full one.
      sinceFull = Number.POSITIVE_INFINITY;
      if (!(error instanceof GiveUp) && (error as Error).name !== "SandboxError") throw error;
      if (!listed && !(error instanceof GiveUp) && copy.entries !== undefined) {
        // The image cannot run the listing (no python3): every step reads the engine's archive.
        archiveOnly = true;
        return takeEntriesSnapshot({ entries: copy.entries(), previous, store, limits });
      }
      const reason =
        error instanceof GiveUp
          ? error.message
          : `the sandbox's copy could not be read (${(error as Error).message})`;
      return { delta: {}, counts: { added: 0, changed: 0, removed: 0 }, skipped, gaveUp: reason, bytesRead };
    }
  };
}
