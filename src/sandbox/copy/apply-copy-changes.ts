import { lstat } from "node:fs/promises";
import { type ExtractResult, strictExtract } from "../host/extract/strict-extract.js";
import { strictDelete } from "../host/paths/strict-paths.js";
import type { ApplyResult, WorkspaceChanges } from "../sandbox.js";
import type { PathPolicy } from "./apply-policy.js";
import type { SandboxArchive } from "./sandbox-archive.js";
import type { WorkspaceCopyPlan } from "./workspace-archive.js";

async function ownerOf(path: string): Promise<{ uid: number; gid: number }> {
  const info = await lstat(path);
  return { uid: info.uid, gid: info.gid };
}

/** Writes the reviewed changes to the host workspace: deletions first, then the strict extract. */
export async function applyCopyChanges(
  plan: WorkspaceCopyPlan,
  archive: SandboxArchive,
  reviewed: WorkspaceChanges,
  refusePath: PathPolicy,
): Promise<ApplyResult> {
  const conflicts = new Set(reviewed.conflicts);
  const wanted = reviewed.changes.filter((c) => !conflicts.has(c.path));
  // A directory that may not become a symlink or file (`.git`) keeps what is in it as well.
  const kept = wanted
    .filter((c) => c.kind === "M" && c.differs.includes("type") && refusePath(c.path, c.after?.type))
    .map((c) => c.path);
  const removed = await strictDelete(
    plan.root,
    wanted.filter((c) => c.kind === "D").map((c) => c.path),
    (path) => {
      const above = kept.find((k) => path.startsWith(`${k}/`));
      return refusePath(path) ?? (above && `inside ${above}, which was refused`);
    },
  );
  const expected = new Map(
    wanted.flatMap((c) => (c.kind !== "D" && c.after ? [[c.path, c.after] as const] : [])),
  );
  let extracted: ExtractResult = { written: [], refused: [], notes: [] };
  if (expected.size > 0) {
    const chownTo = process.getuid?.() === 0 ? await ownerOf(plan.root) : undefined;
    // Nothing is awaited between opening the archive and reading it. What the archive lacks is
    // refused as missing, so the read is not checked further.
    extracted = await strictExtract((await archive.open()).stream, {
      root: plan.root,
      stripPrefix: archive.stripPrefix,
      expected,
      maxTotalBytes: plan.limitBytes,
      maxFileBytes: plan.limitBytes,
      maxEntries: plan.maxEntries,
      refusePath,
      recheckLinks: plan.scan.entries.filter((e) => e.type === "symlink").map((e) => e.path),
      chownTo,
    });
  }
  return {
    written: extracted.written,
    deleted: removed.deleted,
    refused: [
      ...reviewed.conflicts.map((path) => ({
        path,
        reason: "changed on the host during the run; left as it is",
      })),
      ...removed.refused,
      ...extracted.refused,
    ],
    notes: extracted.notes,
  };
}
