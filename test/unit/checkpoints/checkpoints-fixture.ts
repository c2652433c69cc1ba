import { mkdirSync, mkdtempSync, realpathSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BlobStore } from "../../../src/checkpoints/blob-store.js";
import {
  DEFAULT_SNAPSHOT_LIMITS,
  type Manifest,
  type SnapshotLimits,
} from "../../../src/checkpoints/checkpoint-types.js";
import { type Snapshot, takeSnapshot } from "../../../src/checkpoints/snapshot.js";

/** A workspace, a shared blob store and one run's checkpoints directory, all in a temp dir. */
export function checkpointDirs(): { base: string; root: string; shared: string; run: string } {
  const base = realpathSync(mkdtempSync(join(tmpdir(), "harness-checkpoints-")));
  const root = join(base, "workspace");
  mkdirSync(root);
  return { base, root, shared: join(base, "state", "blobs"), run: join(base, "runs", "r1.checkpoints") };
}

export async function snapshotOf(
  dirs: { root: string; shared: string; run: string },
  previous: Manifest = new Map(),
  limits: SnapshotLimits = DEFAULT_SNAPSHOT_LIMITS,
  store = new BlobStore(dirs.shared, join(dirs.run, "blobs")),
): Promise<Snapshot> {
  return takeSnapshot({ root: dirs.root, previous, store, limits });
}
