/**
 * Reading a copy container's changes back and writing them to the host: the one path for the end of
 * a copy-mode session (copy-isolation.ts) and for `harness apply ID` on a kept copy (kept-copy.ts),
 * so that both review, refuse and journal exactly alike.
 */
import type Docker from "dockerode";
import { applyCopyChanges } from "../../copy/apply-copy-changes.js";
import { workspaceRefusal } from "../../copy/apply-policy.js";
import { exportCopyChanges } from "../../copy/export-copy-changes.js";
import type { WorkspaceCopyPlan } from "../../copy/workspace-archive.js";
import type { ApplyResult, WorkspaceChanges } from "../../sandbox.js";
import type { ProtectOptions } from "../../sandbox-request.js";
import { dockerArchive, stopCopyContainer } from "./copy-container.js";
import { stopContainersSharing } from "./workspace-quiesce.js";

/** A copy container and what its copy is compared with. */
export interface ContainerCopy {
  docker: Docker;
  container: Docker.Container;
  plan: WorkspaceCopyPlan;
  workdir: string;
  /** Paths never applied (the ones bind mode mounts read-only). */
  protect?: ProtectOptions | undefined;
  onProgress?: ((line: string) => void) | undefined;
}

/** Stops the container first, so nothing still running in it can change the copy after the review. */
export async function exportContainerChanges(copy: ContainerCopy): Promise<WorkspaceChanges> {
  await stopSharing(copy.docker, copy.plan.root, copy.onProgress);
  await stopCopyContainer(copy.container);
  return exportCopyChanges(copy.plan, dockerArchive(copy.container, copy.workdir), copy.protect);
}

export async function applyContainerChanges(
  copy: ContainerCopy,
  reviewed: WorkspaceChanges,
): Promise<ApplyResult> {
  // The host's .git/config may name a hooks directory or an included config in the work tree. It
  // is read once no bind-mode sandbox of the workspace runs: one run with --no-protect could
  // still rewrite it between the read and its stop.
  await stopSharing(copy.docker, copy.plan.root, copy.onProgress);
  const refusePath = await workspaceRefusal(copy.plan, copy.protect, reviewed.changes);
  return applyCopyChanges(copy.plan, dockerArchive(copy.container, copy.workdir), reviewed, refusePath);
}

/** Stops the bind-mode sandboxes sharing the workspace and says so. */
export async function stopSharing(
  docker: Docker,
  root: string,
  onProgress: ((line: string) => void) | undefined,
): Promise<void> {
  for (const name of await stopContainersSharing(docker, root)) {
    onProgress?.(
      `stopped ${name}, a bind-mode sandbox of this workspace, so nothing in it runs while copy mode reads or writes the workspace`,
    );
  }
}
