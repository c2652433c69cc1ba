import createDebug from "debug";
import type Docker from "dockerode";
import { leasedByLiveProcess } from "../../../state/container-leases.js";
import { LABEL_WORKSPACE } from "../container/labels.js";
import { removeContainer } from "../container/remove-container.js";
import { sandboxError } from "../exec/docker-errors.js";
import { ownerGone } from "./labels/owner-gone.js";

const log = createDebug("harness:docker");

/**
 * A container of an image harness did not build never outlives the harness processes using it: the
 * last one out removes it (bind-isolation.ts). One killed outright (SIGKILL, the OOM killer) cannot,
 * and the image's processes (the owner's uid, but the image's binaries) go on running, writing the
 * workspace unwatched. Reusing that container would let them run on beside the next session too, so
 * the next open removes it instead: once its creator is provably gone (owner labels) and no live
 * harness process holds a lease on it. One whose creator is alive is still being opened or used, and
 * that process removes it itself. Returns the ids removed.
 */
export async function removeAbandonedForeign(
  docker: Docker,
  workspace: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<string[]> {
  const found = await docker
    .listContainers({ all: true, filters: { label: [`${LABEL_WORKSPACE}=${workspace}`] } })
    .catch((error: unknown) => {
      throw sandboxError("listing sandbox containers failed", error);
    });
  const removed: string[] = [];
  for (const info of found) {
    if (!ownerGone(info.Labels) || leasedByLiveProcess(info.Id, env)) continue;
    log("removing %s: its image is not harness's own and no harness process holds it", info.Id.slice(0, 12));
    if (await removeContainer(docker.getContainer(info.Id))) removed.push(info.Id);
  }
  return removed;
}
