/**
 * Whether the process running a run is still there, known for sure: while a run runs, its process
 * keeps `<runs>/.live/<id>.json` (its pid, start time and host, state/process-stamp.ts) and removes it
 * when the run ends. A run without a run_end whose file names a process that is gone was killed
 * (SIGKILL, the OOM killer, a closed laptop): `interrupted`. A continued run rewrites the file with
 * its own process. Runs from before this file existed are judged as run-activity.ts does.
 */
import { mkdirSync, readFileSync, renameSync, rmdirSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ownStamp, type ProcessStamp, stampAlive } from "../state/process-stamp.js";

/** `<runs>/.live`: the runs listing passes over directories with other names. */
export function liveDirOf(runsDir: string): string {
  return join(runsDir, ".live");
}

/** What `markRunLive` gives back. */
export interface LiveMark extends Disposable {
  /**
   * The run never ended (its transcript could not be written, so it has no run_end): the record
   * stays when this process ends, and the run is listed as interrupted, with what `--resume` does.
   */
  keep(): void;
}

/** Records this process as running run `id` until disposed. Never throws: the run goes on without. */
export function markRunLive(runsDir: string, id: string): LiveMark {
  const path = join(liveDirOf(runsDir), `${id}.json`);
  let kept = false;
  try {
    mkdirSync(liveDirOf(runsDir), { recursive: true, mode: 0o700 });
    writeFileSync(`${path}.new`, `${JSON.stringify(ownStamp())}\n`, { mode: 0o600 });
    renameSync(`${path}.new`, path);
  } catch {
    // A read-only or full state directory: the listing falls back to the file times.
  }
  return {
    keep: () => {
      kept = true;
    },
    [Symbol.dispose]: () => {
      if (kept) return;
      try {
        unlinkSync(path);
        // Left only while some run is live or was killed: the runs directory stays as it was.
        rmdirSync(liveDirOf(runsDir));
      } catch {
        // Already gone, or another run's record is still there.
      }
    },
  };
}

/** "alive" or "gone" when run `id` has a live file; undefined when it has none (or it is unreadable). */
export function runLiveness(
  runsDir: string,
  id: string,
  alive: (stamp: ProcessStamp) => boolean = stampAlive,
): "alive" | "gone" | undefined {
  let stamp: ProcessStamp;
  try {
    stamp = JSON.parse(readFileSync(join(liveDirOf(runsDir), `${id}.json`), "utf8")) as ProcessStamp;
  } catch {
    return undefined;
  }
  if (typeof stamp?.pid !== "number") return undefined;
  return alive(stamp) ? "alive" : "gone";
}
