/**
 * Copy mode reads the host workspace at open and writes it back at the end. A bind-mode container of
 * the same workspace (or of a directory above or below it) may still run a task's background
 * process that swaps directories for symlinks while the host walks the tree, and so gets a root-only
 * file read into the sandbox or files written outside the workspace. Nothing from a sandbox may run
 * while the host reads or writes the workspace: those containers are stopped first.
 * A stopped container is started again by its next bind-mode run, with its tmpfs contents reset.
 */
import type Docker from "dockerode";
import { SandboxError } from "../../../errors.js";
import { LABEL_MANAGED, LABEL_WORKSPACE } from "../container/labels.js";
import { dockerStatus, sandboxError } from "../exec/docker-errors.js";

/** States in which a container's processes exist (and may run again, paused ones on unpause). */
const LIVE_STATES = new Set(["running", "paused", "restarting"]);

function overlaps(a: string, b: string): boolean {
  return a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);
}

/**
 * Stops every running harness bind-mode container whose workspace is `root`, lies inside it, or
 * holds it. Returns their names, for the user. Fails (never skips) when one cannot be stopped.
 */
export async function stopContainersSharing(docker: Docker, root: string): Promise<string[]> {
  // The states are picked here, not by a `status` filter: Podman refuses "restarting" there.
  const found = await docker
    .listContainers({ all: true, filters: { label: [`${LABEL_MANAGED}=true`] } })
    .catch((error: unknown) => {
      throw sandboxError("listing sandbox containers failed", error);
    });
  const stopped: string[] = [];
  for (const info of found) {
    if (!LIVE_STATES.has(info.State)) continue;
    const workspace = info.Labels[LABEL_WORKSPACE] ?? "";
    if (workspace.startsWith("copy:") || !overlaps(workspace, root)) continue;
    const container = docker.getContainer(info.Id);
    try {
      // The engine refuses to kill a paused container; its processes would run again on unpause.
      if (info.State === "paused") await container.unpause();
      await container.kill({ signal: "SIGKILL" });
      await container.wait({ condition: "not-running" });
    } catch (error) {
      if (dockerStatus(error) !== 404 && dockerStatus(error) !== 409) {
        throw new SandboxError(
          `could not stop the bind-mode sandbox ${info.Id.slice(0, 12)} of ${workspace}, which could change the workspace while copy mode reads it: ${(error as Error).message}`,
          { cause: error, containerId: info.Id },
        );
      }
    }
    stopped.push((info.Names[0] ?? info.Id).replace(/^\//, ""));
  }
  return stopped;
}
