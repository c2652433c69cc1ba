import { basename } from "node:path";
import type Docker from "dockerode";
import { hostChangesSince } from "../../copy/apply-policy.js";
import { DEFAULT_REPORT_LIMITS, renderDiffs, summarizeChanges } from "../../copy/change-report.js";
import { readSandboxTree } from "../../copy/sandbox-tree.js";
import { countChanges, diffTrees } from "../../copy/tree-diff.js";
import type { WorkspaceCopyPlan } from "../../copy/workspace-archive.js";
import { hostTree, scanWorkspace } from "../../copy/workspace-scan.js";
import type { WorkspaceChanges } from "../../sandbox.js";
import { dockerStatus } from "../exec/docker-errors.js";
import { archiveOf } from "./copy-container.js";

/**
 * Stops the container (so nothing left running in it can change the copy after the review), reads
 * its workspace back and compares it with the host's as it is now.
 */
export async function exportCopyChanges(
  container: Docker.Container,
  plan: WorkspaceCopyPlan,
  workdir: string,
): Promise<WorkspaceChanges> {
  await container.stop({ t: 0 }).catch((error: unknown) => {
    if (dockerStatus(error) !== 304) throw error;
  });
  const scan = await scanWorkspace(plan.root, plan.ignored, plan.maxEntries);
  // After hostTree: it adds the files it could not read to scan.skipped.
  const host = await hostTree(plan.root, scan);
  const skipped = [...plan.scan.skipped, ...scan.skipped].filter(
    (s, i, all) => all.findIndex((o) => o.path === s.path) === i,
  );
  const limits = DEFAULT_REPORT_LIMITS;
  const sandbox = await readSandboxTree(await archiveOf(container, workdir), {
    stripPrefix: `${basename(workdir)}/`,
    maxTotalBytes: plan.limitBytes,
    maxEntries: plan.maxEntries,
    host,
    keepFileBytes: limits.fileBytes,
    keepTotalBytes: 32 * limits.fileBytes,
    // Every diff takes at least three lines, so no more files than this can be shown.
    keepFiles: Math.ceil(limits.totalLines / 3) + 1,
  });
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
  return {
    changes,
    counts,
    summary: summarizeChanges(changes, counts, conflicts),
    diff: await renderDiffs(changes, plan.root, sandbox.contents, limits),
    skipped,
    unsafeNames: sandbox.unsafeNames,
    conflicts,
  };
}
