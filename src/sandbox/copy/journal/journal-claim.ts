/**
 * Who recovers an interrupted apply. Two harness commands started at once on one workspace (or a
 * `harness recover` beside a `run`) both find the same journal whose process is gone; both carrying
 * it through would race on the same renames (each finding the other's work half done, with refusal
 * lines for what the other already moved). Each first leaves a claim of its own beside the journal
 * (`<id>.claim.<random>`, its process stamp), then looks: with any other live claim there it backs
 * off and removes its own. Of two that claim at once at least one sees the other, so at most one
 * goes on (both may back off: the next command recovers). A claim whose process is gone (killed
 * mid-recovery) counts for nothing and is removed.
 */
import { randomBytes } from "node:crypto";
import { mkdir, readdir, readFile, unlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ownStamp, type ProcessStamp, stampAlive } from "../../../state/process-stamp.js";
import { journalDir } from "./apply-journal.js";

export interface JournalClaim {
  /** Removes the claim; harmless when already gone. */
  release(): Promise<void>;
}

/** This process's claim on journal `id`, or undefined when another live process holds one. */
export async function claimJournal(
  id: string,
  env: NodeJS.ProcessEnv = process.env,
  alive: (stamp: ProcessStamp) => boolean = stampAlive,
): Promise<JournalClaim | undefined> {
  const dir = journalDir(env);
  const prefix = `${id}.claim.`;
  const mine = `${prefix}${randomBytes(6).toString("hex")}`;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(join(dir, mine), `${JSON.stringify(ownStamp())}\n`, { flag: "wx", mode: 0o600 });
  const release = () => unlink(join(dir, mine)).catch(() => {});
  for (const name of await readdir(dir)) {
    if (name === mine || !name.startsWith(prefix)) continue;
    const stamp = await readFile(join(dir, name), "utf8")
      .then((text) => JSON.parse(text) as ProcessStamp)
      .catch(() => undefined);
    // Unreadable: being written by a process that claims right now, so counted as live.
    if (stamp === undefined || typeof stamp.pid !== "number" || alive(stamp)) {
      await release();
      return undefined;
    }
    await unlink(join(dir, name)).catch(() => {});
  }
  return { release };
}

/** The claim name `harness apply ID` holds on a kept copy while it applies it (beside the journals). */
export function keptCopyClaimId(copyId: string): string {
  return `copy-${copyId}`;
}
