/**
 * Copy isolation: the workspace is never mounted. A fresh container gets a copy of it in an
 * anonymous volume at the workdir (the archive API cannot reach a tmpfs, and the root filesystem is
 * read-only); at the end its changes are read back, compared with the host, shown, and written to
 * the host only on request, through the strict extractor (host/strict-extract.ts). While the host
 * reads or writes the workspace, no bind-mode sandbox of it runs (docker/workspace-quiesce.ts).
 */
import { randomUUID } from "node:crypto";
import type Docker from "dockerode";
import { SandboxError } from "../../../errors.js";
import { ownStamp } from "../../../state/process-stamp.js";
import {
  type KeptCopyRecord,
  readKeptCopy,
  removeKeptCopy,
  setKeptCopyState,
  writeKeptCopy,
  writeKeptScan,
} from "../../copy/kept/kept-copy-record.js";
import { fetchFromCopy, listCopy } from "../../copy/listing/copy-listing.js";
import { planWorkspaceCopy, type WorkspaceCopyPlan } from "../../copy/workspace-archive.js";
import type {
  ApplyResult,
  CopiedWorkspace,
  CopyListing,
  WorkspaceChanges,
  WorkspaceEntry,
} from "../../sandbox.js";
import type { ProtectOptions } from "../../sandbox-request.js";
import type { AcquireResult } from "../container/container-lifecycle.js";
import { configHash } from "../container/container-spec.js";
import { removeContainer } from "../container/remove-container.js";
import { dockerStatus } from "../exec/docker-errors.js";
import {
  applyContainerChanges,
  type ContainerCopy,
  createCopyContainer,
  exportContainerChanges,
  stopCopyContainer,
  stopSharing,
} from "./copy-container.js";
import { runCopyProgram } from "./copy-program.js";
import type { Isolation, LabelledCreateOptions } from "./isolation.js";
import { keptCopyLine } from "./kept-copy.js";
import { copyLabels, LABEL_ISOLATION } from "./labels/copy-container-labels.js";
import { sweepOrphanedCopies } from "./orphaned-copies.js";
import { workspaceEntries } from "./workspace-entries.js";

export interface CopyIsolationOptions {
  /** Most bytes of file content copied in, and back out. */
  copyLimitBytes: number;
  /** Most files, directories and symlinks copied in, and read back. */
  copyMaxFiles: number;
  /** Paths never applied (the ones bind mode mounts read-only). */
  protect?: ProtectOptions | undefined;
  /**
   * Keep the copy when the session ends without its changes applied or dropped (docs/copy-mode.md):
   * its id (the run's, or one of its own) and the command. Without it the copy goes at the end.
   */
  keep?: { id: string; command: string } | undefined;
  onProgress?: ((line: string) => void) | undefined;
}

export class CopyIsolation implements Isolation, CopiedWorkspace {
  readonly kind = "copy";
  readonly protectedMounts = [];
  private container: Docker.Container | undefined;
  /** The kept copy's record, from the moment the container is about to exist. */
  private record: KeptCopyRecord | undefined;
  /** The changes landed, were dropped, or there were none: the end removes the copy. */
  private settled = false;

  private constructor(
    private readonly docker: Docker,
    private readonly plan: WorkspaceCopyPlan,
    /** "uid:gid" that owns the copy. */
    private readonly user: string,
    private readonly workdir: string,
    private readonly options: CopyIsolationOptions,
  ) {}

  /**
   * Scans the workspace (a real path) and checks the size limit before anything is created, with
   * no sandbox process left running that could swap the tree under the scan.
   */
  static async prepare(
    docker: Docker,
    workspace: string,
    user: string,
    workdir: string,
    options: CopyIsolationOptions,
  ): Promise<CopyIsolation> {
    await stopSharing(docker, workspace, options.onProgress);
    const plan = await planWorkspaceCopy(workspace, options.copyLimitBytes, options.copyMaxFiles);
    // A continued run has its first session's id, whose copy may still be kept: this one gets `ID.2`.
    const keep = options.keep && { ...options.keep, id: await unusedCopyId(options.keep.id) };
    return new CopyIsolation(docker, plan, user, workdir, { ...options, keep });
  }

  get copy(): CopiedWorkspace {
    return this;
  }

  labels(create: Docker.ContainerCreateOptions, imageId: string): Record<string, string> {
    const hash = configHash({ ...create, Image: imageId, Labels: { [LABEL_ISOLATION]: "copy" } });
    return copyLabels(this.plan.root, hash, randomUUID(), this.options.keep?.id);
  }

  async acquire(create: LabelledCreateOptions): Promise<AcquireResult> {
    // Copies left by harness processes that are gone: removed, or kept while they may hold work.
    await sweepOrphanedCopies(this.docker, this.options.onProgress);
    const keep = this.options.keep;
    if (keep) {
      // Before the container exists: a copy the sweep finds without a record is never judged empty.
      this.record = {
        version: 1,
        id: keep.id,
        command: keep.command,
        root: this.plan.root,
        workdir: this.workdir,
        createdAt: new Date().toISOString(),
        state: "opening",
        owner: ownStamp(),
        limitBytes: this.plan.limitBytes,
        maxEntries: this.plan.maxEntries,
        protect: this.options.protect ?? {},
      };
      await writeKeptCopy(this.record);
    }
    // The scan is written beside the copy going in; the record says `open` only once both are done.
    const scanWritten = keep
      ? writeKeptScan(keep.id, this.plan.scan).then(
          () => undefined,
          (error: unknown) => error,
        )
      : Promise.resolve(undefined);
    try {
      this.container = await createCopyContainer(this.docker, create, this.plan, this.user, this.workdir);
      const failed = await scanWritten;
      if (failed !== undefined) throw failed;
    } catch (error) {
      await scanWritten;
      if (this.container) await removeContainer(this.container).catch(() => {});
      this.container = undefined;
      if (keep) await removeKeptCopy(keep.id).catch(() => {});
      throw error;
    }
    // Started, and no command has run yet: from now on the copy may hold the sandbox's work.
    if (this.record) await setKeptCopyState(this.record, "open");
    return { container: this.container, acquired: "created" };
  }

  async verifyStarted(): Promise<void> {}

  async begin(): Promise<void> {}

  async replaceGone(): Promise<Docker.Container> {
    throw new SandboxError("the copy-mode sandbox container is gone, and its copy of the workspace with it", {
      containerId: this.container?.id,
    });
  }

  settle(): void {
    this.settled = true;
  }

  /** The open failed before the run began: nothing of the sandbox's work is in the copy. */
  async abandon(container: Docker.Container): Promise<void> {
    this.settled = true;
    await this.end(container);
  }

  /**
   * The container and its volume (the copy) go once its changes are settled (or when nothing asked
   * to keep it); otherwise it is stopped and kept, and one line says how to land or drop it.
   */
  async end(container: Docker.Container): Promise<void> {
    const record = this.record;
    if (record && !this.settled) {
      try {
        await stopCopyContainer(container);
        this.options.onProgress?.(keptCopyLine(record.id));
        return;
      } catch (error) {
        // Gone (removed from outside): so is the copy, and there is nothing to keep.
        if (dockerStatus(error) !== 404) throw error;
      }
    }
    // Settled before the removal: killed in between, the sweep removes the rest.
    if (record) await setKeptCopyState(record, "settled");
    await removeContainer(container);
    if (record) await removeKeptCopy(record.id);
  }

  async exportChanges(): Promise<WorkspaceChanges> {
    return exportContainerChanges(this.containerCopy());
  }

  async applyChanges(reviewed: WorkspaceChanges): Promise<ApplyResult> {
    return applyContainerChanges(this.containerCopy(), reviewed);
  }

  entries(): AsyncIterable<WorkspaceEntry> {
    return workspaceEntries(this.started(), this.workdir);
  }

  list(prune: readonly string[], maxEntries: number): Promise<CopyListing> {
    return listCopy(this.program(), this.workdir, prune, maxEntries);
  }

  fetch(paths: readonly string[]): AsyncIterable<WorkspaceEntry> {
    return fetchFromCopy(this.program(), this.workdir, paths);
  }

  private program(): (argv: string[]) => ReturnType<typeof runCopyProgram> {
    const container = this.started();
    return (argv) => runCopyProgram(container, this.user, argv);
  }

  private containerCopy(): ContainerCopy {
    const { docker, plan, workdir } = this;
    return { docker, container: this.started(), plan, workdir, ...this.options };
  }

  private started(): Docker.Container {
    if (!this.container) throw new SandboxError("the copy-mode sandbox was never started");
    return this.container;
  }
}

/** `id`, or `id.2`, `id.3`… when a kept copy already has it. */
async function unusedCopyId(id: string): Promise<string> {
  let free = id;
  for (let n = 2; (await readKeptCopy(free)) !== undefined; n++) free = `${id}.${n}`;
  return free;
}
