import type { ProtectOptions } from "../host/git/protected-paths.js";
import type { WorkspaceChanges } from "../sandbox.js";
import { hostChangesSince, refusalsOf, workspaceRefusal } from "./apply-policy.js";
import { DEFAULT_REPORT_LIMITS, renderDiffs, summarizeChanges } from "./change-report.js";
import type { SandboxArchive } from "./sandbox-archive.js";
import { readSandboxTree } from "./sandbox-tree.js";
import { countChanges, diffTrees } from "./tree-diff.js";
import type { WorkspaceCopyPlan } from "./workspace-archive.js";
import { hostTree, scanWorkspace } from "./workspace-scan.js";

/**
 * Reads the sandbox's copy of the workspace back and compares it with the host's as it is now. The
 * caller has first stopped everything that could still change the copy (after the review is too late).
 */
export async function exportCopyChanges(
  plan: WorkspaceCopyPlan,
  archive: SandboxArchive,
  protect: ProtectOptions = {},
): Promise<WorkspaceChanges> {
  const scan = await scanWorkspace(plan.root, plan.ignored, plan.maxEntries);
  // After hostTree: it adds the files it could not read to scan.skipped.
  const host = await hostTree(plan.root, scan);
  const skipped = [...plan.scan.skipped, ...scan.skipped].filter(
    (s, i, all) => all.findIndex((o) => o.path === s.path) === i,
  );
  const limits = DEFAULT_REPORT_LIMITS;
  const read = await archive.open();
  const sandbox = await readSandboxTree(read.stream, {
    stripPrefix: archive.stripPrefix,
    maxTotalBytes: plan.limitBytes,
    maxEntries: plan.maxEntries,
    host,
    keepFileBytes: limits.fileBytes,
    keepTotalBytes: 32 * limits.fileBytes,
    // Every diff takes at least three lines, so no more files than this can be shown.
    keepFiles: Math.ceil(limits.totalLines / 3) + 1,
  });
  // Only a read that got everything counts: a file the sandbox could not send would look deleted.
  await read.check?.();
  const notCompared = [...skipped.map((s) => s.path), ...sandbox.undecodable];
  const leftOut = (path: string, isDirectory: boolean) =>
    plan.ignored(path, isDirectory) || notCompared.some((p) => path === p || path.startsWith(`${p}/`));
  const since = hostChangesSince(plan.scan, scan);
  // A path the user created on the host meanwhile is missing from the copy, not deleted by the sandbox.
  const changes = diffTrees(host, sandbox.tree, leftOut).filter(
    (c) => c.kind !== "D" || since.existedAtCopy(c.path),
  );
  const conflicts = changes.filter((c) => since.changedOnHost(c.path)).map((c) => c.path);
  const counts = countChanges(changes);
  // What the apply will refuse, as the workspace is now (the apply decides again, then).
  const refused = refusalsOf(await workspaceRefusal(plan, protect, changes, scan.entries), changes);
  return {
    changes,
    counts,
    summary: summarizeChanges(changes, counts, conflicts, refused),
    refused,
    diff: await renderDiffs(changes, plan.root, sandbox.contents, limits),
    skipped,
    unsafeNames: sandbox.unsafeNames,
    conflicts,
  };
}
