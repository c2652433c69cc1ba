/**
 * `--isolation copy` through dockerode: the workspace is never mounted. A fresh container gets a
 * copy of it in an anonymous volume at the workdir (the archive API cannot reach a tmpfs, and the
 * root filesystem is read-only); at the end its changes are read back, compared with the host,
 * shown, and written to the host only on request, through the strict extractor.
 */
import { randomBytes } from "node:crypto";
import { readFileSync, readlinkSync } from "node:fs";
import { lstat } from "node:fs/promises";
import { hostname } from "node:os";
import { basename } from "node:path";
import type { Readable } from "node:stream";
import createDebug from "debug";
import type Docker from "dockerode";
import { HarnessError, SandboxError } from "../errors.js";
import { hostChangesSince, type PathPolicy } from "./apply-policy.js";
import { DEFAULT_REPORT_LIMITS, renderDiffs, summarizeChanges } from "./change-report.js";
import { containerName } from "./container-lifecycle.js";
import { dockerStatus } from "./docker-errors.js";
import {
  createLabels,
  LABEL_MANAGED,
  LABEL_OWNER_BOOT_ID,
  LABEL_OWNER_HOST,
  LABEL_OWNER_PID,
  LABEL_OWNER_PID_NS,
} from "./labels.js";
import { readSandboxTree } from "./sandbox-tree.js";
import { type ExtractResult, type Refusal, strictExtract } from "./strict-extract.js";
import { strictDelete } from "./strict-paths.js";
import { type Change, type ChangeCounts, countChanges, diffTrees } from "./tree-diff.js";
import { parseUserIds } from "./workspace.js";
import { packWorkspace, type WorkspaceCopyPlan } from "./workspace-archive.js";
import { hostTree, type SkippedPath, scanWorkspace } from "./workspace-scan.js";

export const LABEL_ISOLATION = "dev.harness.isolation";

const log = createDebug("harness:docker");

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

/** The harness process as owner labels name it; "" where something cannot be read. */
export interface OwnerIdentity {
  /** Hostname and /etc/machine-id: another machine (or container) on the same engine differs. */
  host: string;
  /** /proc/sys/kernel/random/boot_id: new at every boot, when every earlier process is gone. */
  bootId: string;
  /** /proc/self/ns/pid: a pid is only meaningful inside its own pid namespace. */
  pidNs: string;
  pid: number;
}

function readOr(read: () => string): string {
  try {
    return read().trim();
  } catch {
    return "";
  }
}

export function ownerIdentity(): OwnerIdentity {
  const machineId = readOr(() => readFileSync("/etc/machine-id", "utf8"));
  return {
    host: `${hostname()} ${machineId}`.trim(),
    bootId: readOr(() => readFileSync("/proc/sys/kernel/random/boot_id", "utf8")),
    pidNs: readOr(() => readlinkSync("/proc/self/ns/pid")),
    pid: process.pid,
  };
}

/**
 * Labels of a copy-mode container. Its workspace label is `copy:<path>`, so a bind-mode run of the
 * same workspace (which finds its container by that label) never reuses or removes it. The owner
 * labels let a later run tell a container whose harness process died without removing it.
 */
export function copyLabels(workspace: string, configHash: string, sessionId: string): Record<string, string> {
  const owner = ownerIdentity();
  return {
    ...createLabels(`copy:${workspace}`, configHash, sessionId),
    [LABEL_ISOLATION]: "copy",
    [LABEL_OWNER_HOST]: owner.host,
    [LABEL_OWNER_BOOT_ID]: owner.bootId,
    [LABEL_OWNER_PID_NS]: owner.pidNs,
    [LABEL_OWNER_PID]: String(owner.pid),
  };
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, as another user's process.
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}

/**
 * Whether the harness process that created a copy-mode container is gone. Only a container made on
 * this machine is judged (another machine's harness may be running); there, a different boot id
 * means the owner died with the last boot, and in the same pid namespace a pid that is no process
 * (ESRCH) means it exited. A container without owner labels (older harness) is never judged.
 */
export function isOrphanedCopy(
  labels: Record<string, string>,
  here: OwnerIdentity = ownerIdentity(),
  alive: (pid: number) => boolean = processAlive,
): boolean {
  const pid = Number(labels[LABEL_OWNER_PID]);
  if (labels[LABEL_ISOLATION] !== "copy" || !Number.isSafeInteger(pid) || pid <= 0) return false;
  if (labels[LABEL_OWNER_HOST] !== here.host) return false;
  if (labels[LABEL_OWNER_BOOT_ID] !== here.bootId) return true;
  if (labels[LABEL_OWNER_PID_NS] !== here.pidNs) return false;
  return !alive(pid);
}

/**
 * Removes copy-mode containers of any workspace whose harness process is gone, with their volumes.
 * A run ends by removing its own, but a second Ctrl-C exits before `await using` can. Best effort:
 * a failure here is logged, never fatal. Returns the ids removed.
 */
export async function removeOrphanedCopies(docker: Docker): Promise<string[]> {
  const removed: string[] = [];
  try {
    const found = await docker.listContainers({
      all: true,
      filters: { label: [`${LABEL_MANAGED}=true`, `${LABEL_ISOLATION}=copy`] },
    });
    const here = ownerIdentity();
    for (const info of found.filter((c) => isOrphanedCopy(c.Labels, here))) {
      log("removing copy-mode container %s: its harness process is gone", info.Id.slice(0, 12));
      await docker
        .getContainer(info.Id)
        .remove({ force: true, v: true })
        .then(() => removed.push(info.Id))
        .catch((error: unknown) => log("removing %s failed: %s", info.Id.slice(0, 12), error));
    }
  } catch (error) {
    log("looking for orphaned copy-mode containers failed: %s", error);
  }
  return removed;
}

/**
 * Creates a throwaway container, puts the workspace into its volume, then starts it. Copy-mode
 * containers left behind by harness processes that are gone are removed first.
 */
export async function createCopyContainer(
  docker: Docker,
  create: Docker.ContainerCreateOptions,
  plan: WorkspaceCopyPlan,
  user: string,
  workdir: string,
): Promise<Docker.Container> {
  await removeOrphanedCopies(docker);
  const name = `${containerName(plan.root)}-copy-${randomBytes(4).toString("hex")}`;
  const container = await docker.createContainer({ ...create, name }).catch((error: unknown) => {
    throw new SandboxError(`creating the copy-mode container failed: ${(error as Error).message}`, {
      cause: error,
    });
  });
  try {
    const packed = packWorkspace(plan, parseUserIds(user));
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
    if (dockerStatus(error) !== 304) throw error;
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
    // Nothing is awaited between opening the archive and reading it.
    extracted = await strictExtract(await archiveOf(container, workdir), {
      root: plan.root,
      stripPrefix: `${basename(workdir)}/`,
      expected,
      maxTotalBytes: plan.limitBytes,
      maxFileBytes: plan.limitBytes,
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
