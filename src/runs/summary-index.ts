/**
 * What each transcript said the last time it was listed, kept in `<runs dir>/.index.json` keyed by
 * its size and mtime, so `harness runs` over thousands of runs reads only the transcripts that are new
 * or changed. Only a cache: missing, damaged, of another version or not writable, it is rebuilt or
 * simply not kept, and the listing is the same. Two processes writing it at once each write a whole
 * file and rename it into place; the last one wins.
 */
import { readFileSync, renameSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { openHostFile } from "../host-files/host-file.js";
import { type HostDir, openHostDir } from "../host-files/host-path.js";
import type { TranscriptSummary } from "./run-summary.js";

const VERSION = 1;
export const INDEX_FILE = ".index.json";

/** A transcript's summary as cached: without the final text, which the listing does not show. */
export type IndexedSummary = Omit<TranscriptSummary, "finalText">;

interface Entry {
  size: number;
  mtimeMs: number;
  summary: IndexedSummary;
}

export class SummaryIndex {
  private readonly next = new Map<string, Entry>();
  private changed = false;

  private constructor(
    private readonly path: string,
    private readonly previous: ReadonlyMap<string, Entry>,
    private readonly enabled: boolean,
  ) {}

  /**
   * The index of runs directory `dir` (empty when there is none or it cannot be read). Disabled, it
   * neither reads nor writes: every summary comes from its transcript.
   */
  static load(dir: string, enabled = true): SummaryIndex {
    const path = join(dir, INDEX_FILE);
    const entries = new Map<string, Entry>();
    if (enabled)
      try {
        const data = JSON.parse(readFileSync(path, "utf8")) as { version?: unknown; entries?: unknown };
        if (data.version === VERSION && typeof data.entries === "object" && data.entries !== null)
          for (const [id, entry] of Object.entries(data.entries as Record<string, Entry>))
            entries.set(id, entry);
      } catch {
        // No index yet, or a damaged one: every transcript is read again.
      }
    return new SummaryIndex(path, entries, enabled);
  }

  /** The summary of run `id` whose transcript has this size and mtime, from the index or `read`. */
  summary(id: string, size: number, mtimeMs: number, read: () => TranscriptSummary): IndexedSummary {
    const known = this.previous.get(id);
    if (known !== undefined && known.size === size && known.mtimeMs === mtimeMs && isSummary(known.summary)) {
      this.next.set(id, known);
      return known.summary;
    }
    const { finalText: _unused, ...summary } = read();
    // An unreadable transcript may be readable next time (permissions fixed): not kept.
    if (summary.state !== "unreadable") this.next.set(id, { size, mtimeMs, summary });
    this.changed = true;
    return summary;
  }

  /** Writes the index when it changed (entries of removed runs dropped). Never throws. */
  save(): void {
    if (!this.enabled || (!this.changed && this.next.size === this.previous.size)) return;
    // Through the directory held open, never a link at any name (host-files/): the state directory
    // may lie in a workspace.
    let dir: HostDir | undefined;
    const temporary = `${INDEX_FILE}.${process.pid}.tmp`;
    try {
      dir = openHostDir(dirname(this.path));
      // A crashed listing's leftover (or anything else at the name) goes: unlink never follows.
      rmSync(dir.at(temporary), { force: true });
      const entries = Object.fromEntries(this.next);
      const file = openHostFile(dir, temporary, { mode: 0o600, exclusive: true });
      try {
        file.write(JSON.stringify({ version: VERSION, entries }));
      } finally {
        file.close();
      }
      renameSync(dir.at(temporary), dir.at(INDEX_FILE));
    } catch {
      // A read-only or full state directory: the next listing reads the transcripts again.
      try {
        if (dir !== undefined) rmSync(dir.at(temporary), { force: true });
      } catch {
        // Nothing was written, or nothing can be removed: either way nothing more to do.
      }
    } finally {
      dir?.close();
    }
  }
}

function isSummary(value: unknown): value is IndexedSummary {
  const summary = value as Partial<IndexedSummary> | null;
  return (
    typeof summary === "object" &&
    summary !== null &&
    typeof summary.state === "string" &&
    typeof summary.turns === "number" &&
    typeof summary.usage === "object"
  );
}
