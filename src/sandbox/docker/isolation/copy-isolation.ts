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
import { applyCopyChanges } from "../../copy/apply-copy-changes.js";
import { workspaceRefusal } from "../../copy/apply-policy.js";
import { exportCopyChanges } from "../../copy/export-copy-changes.js";
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
import { createCopyContainer, dockerArchive, stopCopyContainer } from "./copy-container.js";
import { copyLabels, LABEL_ISOLATION } from "./copy-container-labels.js";
import { runCopyProgram } from "./copy-program.js";
import type { Isolation, LabelledCreateOptions } from "./isolation.js";
import { workspaceEntries } from "./workspace-entries.js";
import { stopContainersSharing } from "./workspace-quiesce.js";

export interface CopyIsolationOptions {
  /** Most bytes of file content copied in, and back out. */
  copyLimitBytes: number;
  /** Most files, directories and symlinks copied in, and read back. */
  copyMaxFiles: number;
  /** Paths never applied (the ones bind mode mounts read-only). */
  protect?: ProtectOptions | undefined;
  onProgress?: ((line: string) => void) | undefined;
}

export class CopyIsolation implements Isolation, CopiedWorkspace {
  readonly kind = "copy";
  readonly protectedMounts = [];
  private container: Docker.Container | undefined;

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
    return new CopyIsolation(docker, plan, user, workdir, options);
  }

  get copy(): CopiedWorkspace {
    return this;
  }

  labels(create: Docker.ContainerCreateOptions, imageId: string): Record<string, string> {
    const hash = configHash({ ...create, Image: imageId, Labels: { [LABEL_ISOLATION]: "copy" } });
    return copyLabels(this.plan.root, hash, randomUUID());
  }

  async acquire(create: LabelledCreateOptions): Promise<AcquireResult> {
    this.container = await createCopyContainer(this.docker, create, this.plan, this.user, this.workdir);
    return { container: this.container, acquired: "created" };
  }

  async verifyStarted(): Promise<void> {}

  async begin(): Promise<void> {}

  async replaceGone(): Promise<Docker.Container> {
    throw new SandboxError("the copy-mode sandbox container is gone, and its copy of the workspace with it", {
      containerId: this.container?.id,
    });
  }

  /** The container and its volume (the copy) go. */
  async end(container: Docker.Container): Promise<void> {
    await removeContainer(container);
  }

  /** Stops the container first, so nothing still running in it can change the copy after the review. */
  async exportChanges(): Promise<WorkspaceChanges> {
    await stopSharing(this.docker, this.plan.root, this.options.onProgress);
    const container = this.started();
    await stopCopyContainer(container);
    return exportCopyChanges(this.plan, dockerArchive(container, this.workdir), this.options.protect);
  }

  async applyChanges(reviewed: WorkspaceChanges): Promise<ApplyResult> {
    // The host's .git/config may name a hooks directory or an included config in the work tree. It
    // is read once no bind-mode sandbox of the workspace runs: one run with --no-protect could
    // still rewrite it between the read and its stop.
    await stopSharing(this.docker, this.plan.root, this.options.onProgress);
    const refusePath = await workspaceRefusal(this.plan, this.options.protect, reviewed.changes);
    const archive = dockerArchive(this.started(), this.workdir);
    return applyCopyChanges(this.plan, archive, reviewed, refusePath);
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

  private started(): Docker.Container {
    if (!this.container) throw new SandboxError("the copy-mode sandbox was never started");
    return this.container;
  }
}

/** Stops the bind-mode sandboxes sharing the workspace and says so. */
async function stopSharing(
  docker: Docker,
  workspace: string,
  onProgress: ((line: string) => void) | undefined,
): Promise<void> {
  for (const name of await stopContainersSharing(docker, workspace)) {
    onProgress?.(
      `stopped ${name}, a bind-mode sandbox of this workspace, so nothing in it runs while copy mode reads or writes the workspace`,
    );
  }
}
