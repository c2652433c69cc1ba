/**
 * The second half of copy mode's apply, from a committed journal (apply-journal.ts): deletions
 * moved aside into the staging directory, staged entries renamed into place, the staging directory
 * and the journal removed. Every step can run again after a kill: what was already moved is not in
 * its old place (or the staging directory) any more. Also what the next command does with a journal
 * whose process is gone: `recoverApplies`.
 */
import { realpath, rename, rm, rmdir } from "node:fs/promises";
import { join } from "node:path";
import { SandboxError } from "../../../errors.js";
import { faultPoint } from "../../../faults/fault-point.js";
import { type ProcessStamp, stampAlive } from "../../../state/process-stamp.js";
import { placeStaged } from "../../host/extract/staged-extract.js";
import type { ExtractResult } from "../../host/extract/strict-extract-types.js";
import { BeneathError, withBeneath } from "../../host/paths/beneath.js";
import { type RemoveEntry, strictDelete } from "../../host/paths/strict-paths.js";
import type { ApplyResult } from "../../sandbox.js";
import {
  type ApplyJournal,
  HARNESS_DIR,
  journalDir,
  journalExists,
  readJournals,
  removeJournal,
} from "./apply-journal.js";
import { claimJournal } from "./journal-claim.js";

/**
 * Carries a committed apply through. `resuming`: another process began it (and was killed), so
 * part of it may be done already and the staged files are checked again (staged-extract.ts).
 */
export async function commitApply(
  journal: ApplyJournal,
  env: NodeJS.ProcessEnv,
  resuming: boolean,
): Promise<Omit<ApplyResult, "notes">> {
  const result: ExtractResult = { written: [], refused: [], notes: [] };
  let deleted: string[] = [];
  const found = await withBeneath(journal.root, async (stagingRoot) => {
    const staging = await stagingRoot.dir([HARNESS_DIR, journal.staging]).catch((error: unknown) => {
      if (error instanceof BeneathError) return undefined;
      throw error;
    });
    if (!staging) return false;
    let aside = 0;
    // A file or link deleted is moved into the staging directory (dropped with it at the end); an
    // emptied directory is removed, as strictDelete does (there is nothing in it to keep).
    const moveAside: RemoveEntry = async (parent, name, info) => {
      if (info.isDirectory()) await rmdir(parent.at(name));
      else await rename(parent.at(name), staging.at(`d${aside++}`));
    };
    const removed = await strictDelete(journal.root, journal.deletions, undefined, moveAside);
    deleted = removed.deleted;
    result.refused.push(...removed.refused);
    faultPoint("apply:deleted");
    const half = Math.ceil(journal.ops.length / 2);
    await withBeneath(journal.root, (beneath) =>
      placeStaged(
        beneath,
        staging,
        journal.ops,
        [...journal.refusedPaths],
        {
          chownTo: journal.chownTo,
          recheckLinks: journal.recheckLinks,
          resuming,
          onPlaced: (count) => {
            if (count === half) faultPoint("apply:placing");
          },
        },
        result,
      ),
    );
    faultPoint("apply:placed");
    return true;
  });
  await dropStaging(journal);
  await removeJournal(journal.id, env);
  if (!found) {
    result.refused.push({
      path: `${HARNESS_DIR}/${journal.staging}`,
      reason: "the staging directory is gone: nothing of the interrupted apply could be put in place",
    });
  }
  return { written: result.written, deleted, refused: result.refused };
}

/** Removes the staging directory (never following a link) and `.harness/` when this apply made it. */
export async function dropStaging(
  journal: Pick<ApplyJournal, "root" | "staging" | "madeHarnessDir">,
): Promise<void> {
  await withBeneath(journal.root, async (beneath) => {
    const dir = await beneath.dir([HARNESS_DIR]).catch((error: unknown) => {
      if (error instanceof BeneathError) return undefined;
      throw error;
    });
    if (!dir) return;
    await rm(dir.at(journal.staging), { recursive: true, force: true });
    if (journal.madeHarnessDir) {
      const above = await beneath.dir([]);
      await rmdir(above.at(HARNESS_DIR)).catch(() => {});
    }
  });
}

/** What `recoverApplies` did with one interrupted apply, in one line. */
export interface Recovered {
  root: string;
  line: string;
}

/**
 * Finishes (a committed journal) or rolls back (one still staging) every apply whose process is
 * gone; only those of `workspace` when given. Journals of a running apply are left alone.
 */
export async function recoverApplies(
  env: NodeJS.ProcessEnv = process.env,
  workspace?: string,
  alive: (stamp: ProcessStamp) => boolean = stampAlive,
): Promise<Recovered[]> {
  const done: Recovered[] = [];
  const root = workspace === undefined ? undefined : await realpath(workspace).catch(() => workspace);
  for (const journal of await readJournals(env)) {
    if (root !== undefined && journal.root !== root) continue;
    if (alive(journal.owner)) continue;
    // Another command recovering it right now: left to that one.
    const claim = await claimJournal(journal.id, env, alive);
    if (claim === undefined) continue;
    try {
      // Gone meanwhile: the process whose claim went before ours finished it.
      if (!(await journalExists(journal.id, env))) continue;
      done.push(
        await recoverOne(journal, env).catch((error: unknown) => {
          throw new SandboxError(
            `could not finish the interrupted copy-mode apply to ${journal.root} (journal ${join(journalDir(env), `${journal.id}.json`)}): ${(error as Error).message}`,
          );
        }),
      );
    } finally {
      await claim.release();
    }
  }
  return done;
}

async function recoverOne(journal: ApplyJournal, env: NodeJS.ProcessEnv): Promise<Recovered> {
  if (journal.state === "staging") {
    await dropStaging(journal);
    await removeJournal(journal.id, env);
    return {
      root: journal.root,
      line: `rolled back an interrupted copy-mode apply to ${journal.root}: nothing in it had changed yet`,
    };
  }
  const result = await commitApply(journal, env, true);
  const reasons = result.refused.map((r) => `${r.path}: ${r.reason}`).slice(0, 3);
  return {
    root: journal.root,
    line: `finished an interrupted copy-mode apply to ${journal.root}: ${result.written.length} written, ${result.deleted.length} deleted, ${result.refused.length} refused${reasons.length > 0 ? ` (${reasons.join("; ")})` : ""}`,
  };
}
