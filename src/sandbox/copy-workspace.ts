/**
 * `--isolation copy` through dockerode: the workspace is never mounted. A fresh container gets a
 * copy of it in an anonymous volume at the workdir (the archive API cannot reach a tmpfs, and the
 * root filesystem is read-only); at the end its changes are read back, compared with the host,
 * shown, and written to the host only on request, through the strict extractor.
 */
import { randomBytes } from "node:crypto";
import { lstat } from "node:fs/promises";
import { basename } from "node:path";
import type { Readable } from "node:stream";
import type Docker from "dockerode";
import { HarnessError, SandboxError } from "../errors.js";
import { hostChangesSince } from "./apply-policy.js";
import { DEFAULT_REPORT_LIMITS, renderDiffs, summarizeChanges } from "./change-report.js";
import { containerName } from "./container-lifecycle.js";
import { createLabels } from "./labels.js";
import { readSandboxTree } from "./sandbox-tree.js";
import { type ExtractResult, type Refusal, strictExtract } from "./strict-extract.js";
import { strictDelete } from "./strict-paths.js";
import { type Change, type ChangeCounts, countChanges, diffTrees } from "./tree-diff.js";
import { packWorkspace, type WorkspaceCopyPlan } from "./workspace-archive.js";
import { hostTree, type SkippedPath, scanWorkspace } from "./workspace-scan.js";

export const LABEL_ISOLATION = "dev.harness.isolation";

/** What the sandbox changed in its copy of the workspace, as shown to the user. */
export interface WorkspaceChanges {
  /** Added, modified and deleted paths, sorted. */
  changes: Change[];
  counts: ChangeCounts;
  /** One "A path" / "M path" / "D path" line per change, then the counts. */
  summary: string;
  /** Unified diffs of changed text files (capped; binary and large files get a one-line note). */
  diff: string;
  /** Host paths that were never copied in (special or unreadable files) and so are not compared. */
  skipped: SkippedPath[];
  /** Names in the sandbox's archive that are not safe paths; never applied. */
  unsafeNames: string[];
  /** Changed paths the user also changed on the host during the run: shown, never applied. */
  conflicts: string[];
}

/** What `applyChanges` did: refusals are data, by path and reason. */
export interface ApplyResult {
  written: string[];
  deleted: string[];
  refused: Refusal[];
  /** Written with an adjustment, e.g. setuid bits stripped. */
  notes: Refusal[];
}

/**
 * Labels of a copy-mode container. Its workspace label is `copy:<path>`, so a bind-mode run of the
 * same workspace (which finds its container by that label) never reuses or removes it.
 */
export function copyLabels(workspace: string, configHash: string, sessionId: string): Record<string, string> {
  return { ...createLabels(`copy:${workspace}`, configHash, sessionId), [LABEL_ISOLATION]: "copy" };
}

/** Creates a throwaway container, puts the workspace into its volume, then starts it. */
export async function createCopyContainer(
  docker: Docker,
  create: Docker.ContainerCreateOptions,
  plan: WorkspaceCopyPlan,
  user: string,
  workdir: string,
): Promise<Docker.Container> {
  const name = `${containerName(plan.root)}-copy-${randomBytes(4).toString("hex")}`;
  const container = await docker.createContainer({ ...create, name }).catch((error: unknown) => {
    throw new SandboxError(`creating the copy-mode container failed: ${(error as Error).message}`, {
      cause: error,
    });
  });
  try {
    const [uid = Number.NaN, gid = uid] = user.split(":").map(Number);
    const packed = packWorkspace(plan, { uid, gid });
    await Promise.all([packed.done, container.putArchive(packed.stream, { path: workdir })]);
    await container.start();
  } catch (error) {
    await container.remove({ force: true, v: true }).catch(() => {});
    if (error instanceof HarnessError) throw error;
    throw new SandboxError(`copying the workspace into the sandbox failed: ${(error as Error).message}`, {
      cause: error,
      containerId: container.id,
    });
  }
  return container;
}

async function archiveOf(container: Docker.Container, workdir: string): Promise<Readable> {
  try {
    return (await container.getArchive({ path: workdir })) as unknown as Readable;
  } catch (error) {
    throw new SandboxError(`reading the sandbox's workspace failed: ${(error as Error).message}`, {
      cause: error,
      containerId: container.id,
    });
  }
}

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
    if ((error as { statusCode?: number }).statusCode !== 304) throw error;
  });
  const scan = await scanWorkspace(plan.root, plan.ignored);
  // After hostTree: it adds the files it could not read to scan.skipped.
  const host = await hostTree(plan.root, scan);
  const skipped = [...plan.scan.skipped, ...scan.skipped].filter(
    (s, i, all) => all.findIndex((o) => o.path === s.path) === i,
  );
  const limits = DEFAULT_REPORT_LIMITS;
  const sandbox = await readSandboxTree(await archiveOf(container, workdir), {
    stripPrefix: `${basename(workdir)}/`,
    maxTotalBytes: plan.limitBytes,
    host,
    keepFileBytes: limits.fileBytes,
    keepTotalBytes: 32 * limits.fileBytes,
  });
  const leftOut = (path: string, isDirectory: boolean) =>
    plan.ignored(path, isDirectory) || skipped.some((s) => path === s.path || path.startsWith(`${s.path}/`));
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

async function ownerOf(path: string): Promise<{ uid: number; gid: number }> {
  const info = await lstat(path);
  return { uid: info.uid, gid: info.gid };
}

/** Writes the reviewed changes to the host workspace: deletions first, then the strict extract. */
export async function applyCopyChanges(
  container: Docker.Container,
  plan: WorkspaceCopyPlan,
  workdir: string,
  reviewed: WorkspaceChanges,
  refusePath: (path: string) => string | undefined,
): Promise<ApplyResult> {
  const conflicts = new Set(reviewed.conflicts);
  const wanted = reviewed.changes.filter((c) => !conflicts.has(c.path));
  const removed = await strictDelete(
    plan.root,
    wanted.filter((c) => c.kind === "D").map((c) => c.path),
  );
  const expected = new Map(
    wanted.flatMap((c) => (c.kind !== "D" && c.after ? [[c.path, c.after] as const] : [])),
  );
  let extracted: ExtractResult = { written: [], refused: [], notes: [] };
  if (expected.size > 0) {
    extracted = await strictExtract(await archiveOf(container, workdir), {
      root: plan.root,
      stripPrefix: `${basename(workdir)}/`,
      expected,
      maxTotalBytes: plan.limitBytes,
      maxFileBytes: plan.limitBytes,
      refusePath,
      chownTo: process.getuid?.() === 0 ? await ownerOf(plan.root) : undefined,
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
