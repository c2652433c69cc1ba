import { randomBytes } from "node:crypto";
import { basename } from "node:path";
import type { Readable } from "node:stream";
import type Docker from "dockerode";
import { HarnessError } from "../../../errors.js";
import { applyCopyChanges } from "../../copy/apply-copy-changes.js";
import { workspaceRefusal } from "../../copy/apply-policy.js";
import { exportCopyChanges } from "../../copy/export-copy-changes.js";
import type { SandboxArchive } from "../../copy/sandbox-archive.js";
import { packWorkspace, type WorkspaceCopyPlan } from "../../copy/workspace-archive.js";
import type { ApplyResult, WorkspaceChanges } from "../../sandbox.js";
import type { ProtectOptions } from "../../sandbox-request.js";
import { parseUserIds } from "../../sandbox-user.js";
import { containerName } from "../container/container-lifecycle.js";
import { removeContainer } from "../container/remove-container.js";
import { dockerStatus, sandboxError } from "../exec/docker-errors.js";
import { stopContainersSharing } from "./workspace-quiesce.js";

/** Creates a container, puts the workspace into its volume, then starts it. */
export async function createCopyContainer(
  docker: Docker,
  create: Docker.ContainerCreateOptions,
  plan: WorkspaceCopyPlan,
  user: string,
  workdir: string,
): Promise<Docker.Container> {
  const name = `${containerName(plan.root)}-copy-${randomBytes(4).toString("hex")}`;
  const container = await docker.createContainer({ ...create, name }).catch((error: unknown) => {
    throw sandboxError("creating the copy-mode container failed", error);
  });
  try {
    const packed = packWorkspace(plan, parseUserIds(user));
    await Promise.all([packed.done, container.putArchive(packed.stream, { path: workdir })]);
    await container.start();
  } catch (error) {
    // Best effort: the error that made the copy fail is the one to report.
    await removeContainer(container).catch(() => {});
    if (error instanceof HarnessError) throw error;
    throw sandboxError("copying the workspace into the sandbox failed", error, container.id);
  }
  return container;
}

export async function archiveOf(container: Docker.Container, workdir: string): Promise<Readable> {
  try {
    return (await container.getArchive({ path: workdir })) as unknown as Readable;
  } catch (error) {
    throw sandboxError("reading the sandbox's workspace failed", error, container.id);
  }
}

/** The copy as the archive API gives it: its names start with the workdir's last component. */
export function dockerArchive(container: Docker.Container, workdir: string): SandboxArchive {
  return {
    stripPrefix: `${basename(workdir)}/`,
    open: async () => ({ stream: await archiveOf(container, workdir) }),
  };
}

/** Stops the container (already stopped is fine), so nothing left running in it changes the copy. */
export async function stopCopyContainer(container: Docker.Container): Promise<void> {
  await container.stop({ t: 0 }).catch((error: unknown) => {
    if (dockerStatus(error) !== 304) throw error;
  });
}

// Reading the copy's changes back and writing them to the host: the one path for the end of a
// copy-mode session (copy-isolation.ts) and for `harness apply ID` on a kept copy (kept-copy.ts), so
// that both review, refuse and journal exactly alike.

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
