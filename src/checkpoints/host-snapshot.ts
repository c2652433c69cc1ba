/**
 * Bind mode's snapshots: the host walk (snapshot.ts), skipped for a step after which no watched
 * directory reported a change (change-watch.ts); a skipped step records the previous manifest again.
 * What git ignores (`gitIgnore`) is not walked, so not watched either: a change there costs nothing.
 */
import { ChangeWatch } from "./change-watch.js";
import type { SnapshotFn } from "./run-checkpointer.js";
import { type SnapshotInput, takeSnapshot } from "./snapshot.js";

export interface HostSnapshots {
  snapshot: SnapshotFn;
  /** Ends the watches. */
  close(): void;
}

export function hostSnapshots(
  root: string,
  ignored?: (path: string, isDirectory: boolean) => boolean,
  watch: ChangeWatch = new ChangeWatch(),
  gitIgnore?: SnapshotInput["gitIgnore"],
): HostSnapshots {
  const snapshot: SnapshotFn = async (previous, store, limits) => {
    if (await watch.quiet()) {
      return {
        manifest: previous,
        delta: {},
        counts: { added: 0, changed: 0, removed: 0 },
        skipped: [],
        bytesRead: 0,
      };
    }
    watch.beginWalk();
    const result = await takeSnapshot({
      root,
      previous,
      store,
      limits,
      ...(ignored === undefined ? {} : { ignored }),
      ...(gitIgnore === undefined ? {} : { gitIgnore }),
      onDirectory: (rel, ino, path) => watch.directory(rel, ino, path),
    });
    watch.endWalk(result.manifest !== undefined && result.skipped.length === 0);
    return result;
  };
  return { snapshot, close: () => watch.close() };
}
