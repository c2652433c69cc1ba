/**
 * Copy isolation in a pod: the workspace goes in as a tar stream on an exec's stdin (GNU tar in the
 * pod, as the sandbox user), and comes back as a tar stream on an exec's stdout, read by the same
 * strict host-side code as Docker's copy mode (../copy/: the comparison, the report; ../host/: the
 * strict extraction). Nothing the pod sends is trusted: names, types, sizes and links are checked
 * on the host exactly as for Docker's archive API.
 *
 * Docker stops the container before reading the copy back; a pod cannot be stopped and kept, so
 * `quiesce` ends the executor and kills every process of the sandbox user first (none can start
 * again: nothing else runs commands). The archive is read as the sandbox user, so a file the
 * command made unreadable stops the read with tar's reason instead of looking deleted.
 */
import { lstat } from "node:fs/promises";
import { basename, dirname } from "node:path";
import type { Readable } from "node:stream";
import { SandboxError } from "../../errors.js";
import { hostChangesSince, type PathPolicy, protectedPathRefusal } from "../copy/apply-policy.js";
import { DEFAULT_REPORT_LIMITS, renderDiffs, summarizeChanges } from "../copy/change-report.js";
import { readSandboxTree } from "../copy/sandbox-tree.js";
import { countChanges, diffTrees } from "../copy/tree-diff.js";
import { packWorkspace, type WorkspaceCopyPlan } from "../copy/workspace-archive.js";
import { hostTree, scanWorkspace } from "../copy/workspace-scan.js";
import { entriesOf } from "../docker/isolation/workspace-entries.js";
import { type ExtractResult, strictExtract } from "../host/extract/strict-extract.js";
import { configNamedPaths } from "../host/git/protected-paths.js";
import { strictDelete } from "../host/paths/strict-paths.js";
import type { ApplyResult, CopiedWorkspace, WorkspaceChanges, WorkspaceEntry } from "../sandbox.js";
import type { ProtectOptions } from "../sandbox-request.js";
import { parseUserIds } from "../sandbox-user.js";
import { asUser, type PodOutputStream, runInPod, streamFromPod } from "./api/pod-command.js";
import type { PodTarget } from "./api/pod-exec.js";

/** Copying a large workspace in may take a while; a stalled exec must not hang the open forever. */
const COPY_IN_DEADLINE_MS = 30 * 60_000;

/** Puts the workspace into the pod's workdir (an empty emptyDir owned by the sandbox user). */
export async function copyIntoPod(
  target: PodTarget,
  plan: WorkspaceCopyPlan,
  user: string,
  workdir: string,
): Promise<void> {
  const packed = packWorkspace(plan, parseUserIds(user));
  // -p: the modes as packed (not the umask's); --no-overwrite-dir: the archive's "/" entry leaves
  // the workdir as pod-setup.sh made it.
  const tar = ["tar", "-x", "-p", "--no-overwrite-dir", "--no-same-owner", "-f", "-", "-C", workdir];
  const [, result] = await Promise.all([
    packed.done,
    runInPod(target, asUser(user, tar), { stdin: packed.stream, deadlineMs: COPY_IN_DEADLINE_MS }),
  ]).catch((error: unknown) => {
    if (error instanceof SandboxError) throw error;
    throw new SandboxError(`copying the workspace into the pod failed: ${(error as Error).message}`, {
      cause: error,
      containerId: target.pod,
    });
  });
  if (result.exitCode !== 0) {
    throw new SandboxError(
      `copying the workspace into the pod failed: ${result.error ?? ""} ${lastLines(result.stderr)}`.trim(),
      { containerId: target.pod },
    );
  }
}

/** The pod's workdir as a tar stream (names "workspace/…"), with a check of how tar ended. */
async function archiveOf(target: PodTarget, user: string, workdir: string) {
  const tar = ["tar", "-c", "-f", "-", "--numeric-owner", "-C", dirname(workdir), basename(workdir)];
  return streamFromPod(target, asUser(user, tar)).catch((error: unknown) => {
    throw new SandboxError(`reading the sandbox's workspace failed: ${(error as Error).message}`, {
      cause: error,
      containerId: target.pod,
    });
  });
}

/** Rejects when tar in the pod did not read the whole workspace. */
async function checkRead(target: PodTarget, ended: PodOutputStream["ended"]): Promise<void> {
  const end = await ended;
  if (end.exitCode !== 0) {
    throw new SandboxError(
      `reading the sandbox's workspace failed (nothing is applied): ${end.error ?? ""} ${lastLines(end.stderr)}`.trim(),
      { containerId: target.pod },
    );
  }
}

function lastLines(text: string): string {
  return text.trim().split("\n").slice(-3).join("; ");
}

export interface PodCopyOptions {
  protect?: ProtectOptions | undefined;
  /** Ends everything that could still change the copy (the executor, the user's processes). */
  quiesce: () => Promise<void>;
}

export class PodCopiedWorkspace implements CopiedWorkspace {
  constructor(
    private readonly target: PodTarget,
    private readonly plan: WorkspaceCopyPlan,
    private readonly user: string,
    private readonly workdir: string,
    private readonly options: PodCopyOptions,
  ) {}

  async exportChanges(): Promise<WorkspaceChanges> {
    await this.options.quiesce();
    const plan = this.plan;
    const scan = await scanWorkspace(plan.root, plan.ignored, plan.maxEntries);
    const host = await hostTree(plan.root, scan);
    const skipped = [...plan.scan.skipped, ...scan.skipped].filter(
      (s, i, all) => all.findIndex((o) => o.path === s.path) === i,
    );
    const limits = DEFAULT_REPORT_LIMITS;
    const archive = await archiveOf(this.target, this.user, this.workdir);
    let sandbox: Awaited<ReturnType<typeof readSandboxTree>>;
    try {
      sandbox = await readSandboxTree(archive.stdout, {
        stripPrefix: `${basename(this.workdir)}/`,
        maxTotalBytes: plan.limitBytes,
        maxEntries: plan.maxEntries,
        host,
        keepFileBytes: limits.fileBytes,
        keepTotalBytes: 32 * limits.fileBytes,
        keepFiles: Math.ceil(limits.totalLines / 3) + 1,
      });
    } catch (error) {
      archive.stdout.destroy();
      throw error;
    }
    // Only a tar that read everything counts: a file it could not read would look deleted.
    await checkRead(this.target, archive.ended);
    const notCompared = [...skipped.map((s) => s.path), ...sandbox.undecodable];
    const leftOut = (path: string, isDirectory: boolean) =>
      plan.ignored(path, isDirectory) || notCompared.some((p) => path === p || path.startsWith(`${p}/`));
    const since = hostChangesSince(plan.scan, scan);
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

  async applyChanges(reviewed: WorkspaceChanges): Promise<ApplyResult> {
    await this.options.quiesce();
    const named = (await configNamedPaths(this.plan.root)).map((p) => p.path);
    const protect = this.options.protect ?? {};
    const refusePath: PathPolicy = protectedPathRefusal({
      ...protect,
      extraPaths: [...(protect.extraPaths ?? []), ...named],
    });
    const conflicts = new Set(reviewed.conflicts);
    const wanted = reviewed.changes.filter((c) => !conflicts.has(c.path));
    const kept = wanted
      .filter((c) => c.kind === "M" && c.differs.includes("type") && refusePath(c.path, c.after?.type))
      .map((c) => c.path);
    const removed = await strictDelete(
      this.plan.root,
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
      const owner = process.getuid?.() === 0 ? await ownerOf(this.plan.root) : undefined;
      const archive = await archiveOf(this.target, this.user, this.workdir);
      extracted = await strictExtract(archive.stdout as Readable, {
        root: this.plan.root,
        stripPrefix: `${basename(this.workdir)}/`,
        expected,
        maxTotalBytes: this.plan.limitBytes,
        maxFileBytes: this.plan.limitBytes,
        maxEntries: this.plan.maxEntries,
        refusePath,
        recheckLinks: this.plan.scan.entries.filter((e) => e.type === "symlink").map((e) => e.path),
        chownTo: owner,
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

  async *entries(): AsyncIterable<WorkspaceEntry> {
    const archive = await archiveOf(this.target, this.user, this.workdir);
    let complete = false;
    try {
      yield* entriesOf(archive.stdout, `${basename(this.workdir)}/`);
      complete = true;
    } finally {
      // Stopping early (a limit) lets go of the exec.
      if (!complete) archive.stdout.destroy();
    }
    await checkRead(this.target, archive.ended);
  }
}

async function ownerOf(path: string): Promise<{ uid: number; gid: number }> {
  const info = await lstat(path);
  return { uid: info.uid, gid: info.gid };
}
