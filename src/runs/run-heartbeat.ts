/**
 * Keeps a continued run's transcript looking active to other harness processes. A run counts as
 * possibly running when its id's pid is alive or a file changed within `RECENT_WRITE_MS`
 * (run-activity.ts); a continued run keeps the id of the run it continues, whose process is gone, and
 * may write nothing for minutes (a long command, the prompt waiting for a line). Touching the
 * transcript's mtime while it is open keeps retention (`pruneRuns` in another process) and `runs rm`
 * off it. This process's own pruning keeps it by id (`pruneAfterRun`).
 */
import { lutimesSync } from "node:fs";
import { basename, dirname } from "node:path";
import { openHostDir } from "../host-files/host-path.js";
import { RECENT_WRITE_MS } from "./run-activity.js";

/** Touches `path` now and every third of `RECENT_WRITE_MS` until disposed. Never throws. */
export function keepRunActive(path: string, everyMs: number = RECENT_WRITE_MS / 3): Disposable {
  const touch = () => {
    try {
      const now = new Date();
      // The name itself, through its directory reached without links (host-files/): never what a
      // link swapped in at either leads to.
      const dir = openHostDir(dirname(path));
      try {
        lutimesSync(dir.at(basename(path)), now, now);
      } finally {
        dir.close();
      }
    } catch {
      // Gone or not ours to touch: the run goes on; only its protection from pruning is weaker.
    }
  };
  touch();
  const timer = setInterval(touch, everyMs);
  // Never what keeps the process alive.
  timer.unref();
  return { [Symbol.dispose]: () => clearInterval(timer) };
}
