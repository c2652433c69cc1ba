import { randomBytes } from "node:crypto";
import { basename } from "node:path";
import type { Readable } from "node:stream";
import type Docker from "dockerode";
import { HarnessError } from "../../../errors.js";
import type { SandboxArchive } from "../../copy/sandbox-archive.js";
import { packWorkspace, type WorkspaceCopyPlan } from "../../copy/workspace-archive.js";
import { parseUserIds } from "../../sandbox-user.js";
import { containerName } from "../container/container-lifecycle.js";
import { removeContainer } from "../container/remove-container.js";
import { dockerStatus, sandboxError } from "../exec/docker-errors.js";

/**
 * Creates a container, puts the workspace into its volume, then starts it.
 */
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
