import { lstat, writeFile } from "node:fs/promises";
import { SandboxError } from "../../errors.js";
import { faultPoint } from "../../faults/fault-point.js";
import { ownStamp } from "../../state/process-stamp.js";
import { type StagedExtract, stageExtract } from "../host/extract/staged-extract.js";
import { BeneathError, withBeneath } from "../host/paths/beneath.js";
import { type Refusal, safeComponents } from "../host/paths/strict-paths.js";
import type { ApplyResult, WorkspaceChanges } from "../sandbox.js";
import type { PathPolicy } from "./apply-policy.js";
import { commitApply, dropStaging } from "./journal/apply-commit.js";
import {
  type ApplyJournal,
  HARNESS_DIR,
  newApplyId,
  removeJournal,
  writeJournal,
} from "./journal/apply-journal.js";
import type { SandboxArchive } from "./sandbox-archive.js";
import type { TreeEntry } from "./tree-diff.js";
import type { WorkspaceCopyPlan } from "./workspace-archive.js";

async function ownerOf(path: string): Promise<{ uid: number; gid: number }> {
  const info = await lstat(path);
  return { uid: info.uid, gid: info.gid };
}

/**
 * Writes the reviewed changes to the host workspace, all or nothing: every file is first staged
 * (read from the archive with the strict extract's checks) in `.harness/apply-<id>/`, with nothing
 * else in the workspace changed; then a journal in harness's state directory commits the apply, and
 * the deletions and the staged entries are moved in by renames (apply-commit.ts). Killed before the
 * commit, the next command drops the staging; after it, the next command finishes the apply.
 */
export async function applyCopyChanges(
  plan: WorkspaceCopyPlan,
  archive: SandboxArchive,
  reviewed: WorkspaceChanges,
  refusePath: PathPolicy,
  env: NodeJS.ProcessEnv = process.env,
): Promise<ApplyResult> {
  const conflicts = new Set(reviewed.conflicts);
  const wanted = reviewed.changes.filter((c) => !conflicts.has(c.path));
  // A directory that may not become a symlink or file (`.git`) keeps what is in it as well.
  const kept = wanted
    .filter((c) => c.kind === "M" && c.differs.includes("type") && refusePath(c.path, c.after?.type))
    .map((c) => c.path);
  const deletionRefusals: Refusal[] = [];
  const deletions: string[] = [];
  const deletionPaths = wanted.filter((c) => c.kind === "D").map((c) => c.path);
  for (const path of [...deletionPaths].sort().reverse()) {
    const parts = safeComponents(path);
    if (!Array.isArray(parts) || parts.length === 0) {
      deletionRefusals.push(Array.isArray(parts) ? { path, reason: "the workspace root" } : parts);
      continue;
    }
    const above = kept.find((k) => path.startsWith(`${k}/`));
    const policy = refusePath(parts.join("/")) ?? (above && `inside ${above}, which was refused`);
    if (policy) deletionRefusals.push({ path, reason: policy });
    else deletions.push(path);
  }
  const expected = new Map(
    wanted.flatMap((c) => (c.kind !== "D" && c.after ? [[c.path, c.after] as const] : [])),
  );
  const chownTo = process.getuid?.() === 0 ? await ownerOf(plan.root) : undefined;
  const journal: ApplyJournal = {
    version: 1,
    id: newApplyId(),
    root: plan.root,
    staging: "",
    madeHarnessDir: false,
    owner: ownStamp(),
    state: "staging",
    deletions: [],
    ops: [],
    refusedPaths: [],
    chownTo,
    recheckLinks: plan.scan.entries.filter((e) => e.type === "symlink").map((e) => e.path),
  };
  journal.staging = `apply-${journal.id}`;
  journal.madeHarnessDir = !(await lstat(`${plan.root}/${HARNESS_DIR}`).catch(() => undefined));
  // Written before the staging directory exists: a kill from here on leaves a record to clean up.
  await writeJournal(journal, env);
  let staged: StagedExtract;
  try {
    staged = await stage(plan, archive, expected, refusePath, journal);
  } catch (error) {
    await dropStaging(journal);
    await removeJournal(journal.id, env);
    throw error;
  }
  faultPoint("apply:staged");
  const committed: ApplyJournal = {
    ...journal,
    state: "committed",
    deletions,
    ops: staged.ops,
    refusedPaths: staged.refusedPaths,
  };
  // The commit point: from here on the apply is carried through, by this process or the next one.
  await writeJournal(committed, env);
  faultPoint("apply:committed");
  const done = await commitApply(committed, env, false);
  return {
    written: done.written,
    deleted: done.deleted,
    refused: [
      ...reviewed.conflicts.map((path) => ({
        path,
        reason: "changed on the host during the run; left as it is",
      })),
      ...deletionRefusals,
      ...done.refused,
      ...staged.result.refused,
    ],
    notes: staged.result.notes,
  };
}

/** Creates the staging directory and reads the archive into it. */
async function stage(
  plan: WorkspaceCopyPlan,
  archive: SandboxArchive,
  expected: ReadonlyMap<string, TreeEntry>,
  refusePath: PathPolicy,
  journal: ApplyJournal,
): Promise<StagedExtract> {
  return withBeneath(plan.root, async (stagingRoot) => {
    const owner = journal.chownTo;
    const harness = await stagingRoot.dir([HARNESS_DIR], 0o755).catch((error: unknown) => {
      if (!(error instanceof BeneathError)) throw error;
      throw new SandboxError(`cannot stage the changes in ${plan.root}: ${error.message}`);
    });
    if (owner && journal.madeHarnessDir) await harness.chown(owner.uid, owner.gid);
    const staging = await stagingRoot.dir([HARNESS_DIR, journal.staging], 0o700);
    // git shows nothing of it, should the apply be interrupted and the directory stay a while.
    await writeFile(staging.at(".gitignore"), "*\n", { flag: "wx", mode: 0o600 });
    if (expected.size === 0)
      return { ops: [], result: { written: [], refused: [], notes: [] }, refusedPaths: [] };
    return withBeneath(plan.root, async (beneath) => {
      // Nothing is awaited between opening the archive and reading it. What the archive lacks is
      // refused as missing, so the read is not checked further.
      const { stream } = await archive.open();
      try {
        return await stageExtract(
          stream,
          {
            root: plan.root,
            stripPrefix: archive.stripPrefix,
            expected,
            maxTotalBytes: plan.limitBytes,
            maxFileBytes: plan.limitBytes,
            maxEntries: plan.maxEntries,
            refusePath,
            chownTo: journal.chownTo,
          },
          beneath,
          staging,
          (count) => {
            if (count === 1) faultPoint("apply:staging");
          },
        );
      } finally {
        // However staging ended (a full disk mid-archive too), the engine's archive stream is let go
        // of: left open and paused, it keeps the container busy, and removing it then hangs.
        stream.destroy();
      }
    });
  });
}
