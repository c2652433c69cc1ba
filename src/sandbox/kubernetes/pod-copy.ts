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
import { basename, dirname } from "node:path";
import { SandboxError } from "../../errors.js";
import { applyCopyChanges } from "../copy/apply-copy-changes.js";
import { workspaceRefusal } from "../copy/apply-policy.js";
import { entriesOf } from "../copy/archive-entries.js";
import { exportCopyChanges } from "../copy/export-copy-changes.js";
import { fetchFromCopy, listCopy, type RunProgram } from "../copy/listing/copy-listing.js";
import type { SandboxArchive } from "../copy/sandbox-archive.js";
import { packWorkspace, type WorkspaceCopyPlan } from "../copy/workspace-archive.js";
import type {
  ApplyResult,
  CopiedWorkspace,
  CopyListing,
  WorkspaceChanges,
  WorkspaceEntry,
} from "../sandbox.js";
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
    return exportCopyChanges(this.plan, this.archive(), this.options.protect);
  }

  /** A pod's copy is reset by the next session either way: nothing to keep or to let go of yet. */
  settle(): void {}

  async applyChanges(reviewed: WorkspaceChanges): Promise<ApplyResult> {
    await this.options.quiesce();
    const refusePath = await workspaceRefusal(this.plan, this.options.protect, reviewed.changes);
    return applyCopyChanges(this.plan, this.archive(), reviewed, refusePath);
  }

  /** The workdir read by tar in the pod, as the sandbox user; a read counts only if tar ended well. */
  private archive(): SandboxArchive {
    return {
      stripPrefix: `${basename(this.workdir)}/`,
      open: async () => {
        const archive = await archiveOf(this.target, this.user, this.workdir);
        return { stream: archive.stdout, check: () => checkRead(this.target, archive.ended) };
      },
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

  list(prune: readonly string[], maxEntries: number): Promise<CopyListing> {
    return listCopy(this.program(), this.workdir, prune, maxEntries);
  }

  fetch(paths: readonly string[]): AsyncIterable<WorkspaceEntry> {
    return fetchFromCopy(this.program(), this.workdir, paths);
  }

  /** The listing program in the pod, as the sandbox user; a read counts only if it ended well. */
  private program(): RunProgram {
    return async (argv) => {
      const started = await streamFromPod(this.target, asUser(this.user, argv)).catch((error: unknown) => {
        throw new SandboxError(`reading the sandbox's workspace failed: ${(error as Error).message}`, {
          cause: error,
          containerId: this.target.pod,
        });
      });
      return { stream: started.stdout, check: () => checkRead(this.target, started.ended) };
    };
  }
}
