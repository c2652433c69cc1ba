import createDebug from "debug";
import type Docker from "dockerode";
import { isProcessAlive } from "../../../state/liveness.js";
import {
  LABEL_MANAGED,
  LABEL_OWNER_BOOT_ID,
  LABEL_OWNER_HOST,
  LABEL_OWNER_PID,
  LABEL_OWNER_PID_NS,
} from "../container/labels.js";
import { removeContainer } from "../container/remove-container.js";
import { LABEL_ISOLATION, type OwnerIdentity, ownerIdentity } from "./copy-container-labels.js";

const log = createDebug("harness:docker");

/**
 * Whether the harness process that created a copy-mode container is gone. Only a container made on
 * this machine is judged (another machine's harness may be running); there, a different boot id
 * means the owner died with the last boot, and in the same pid namespace a pid that is no process
 * (ESRCH) means it exited. A container without owner labels (older harness) is never judged.
 */
export function isOrphanedCopy(
  labels: Record<string, string>,
  here: OwnerIdentity = ownerIdentity(),
  alive: (pid: number) => boolean = isProcessAlive,
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
      try {
        if (await removeContainer(docker.getContainer(info.Id))) removed.push(info.Id);
      } catch (error) {
        log("%s", (error as Error).message);
      }
    }
  } catch (error) {
    log("looking for orphaned copy-mode containers failed: %s", error);
  }
  return removed;
}
