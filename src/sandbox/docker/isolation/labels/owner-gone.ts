import { isProcessAlive } from "../../../../state/liveness.js";
import {
  LABEL_OWNER_BOOT_ID,
  LABEL_OWNER_HOST,
  LABEL_OWNER_PID,
  LABEL_OWNER_PID_NS,
} from "../../container/labels.js";
import { type OwnerIdentity, ownerIdentity } from "./copy-container-labels.js";

/**
 * Whether the harness process named by a container's owner labels is provably gone. Only an owner
 * on this machine is judged (another machine's harness may be running): a different boot id means
 * it died with the last boot; in the same pid namespace, a pid that is no process means it exited.
 * Without owner labels (an older harness), or in another pid namespace, nothing is proven: false.
 */
export function ownerGone(
  labels: Record<string, string>,
  here: OwnerIdentity = ownerIdentity(),
  alive: (pid: number) => boolean = isProcessAlive,
): boolean {
  const pid = Number(labels[LABEL_OWNER_PID]);
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  if (labels[LABEL_OWNER_HOST] !== here.host) return false;
  if (labels[LABEL_OWNER_BOOT_ID] !== here.bootId) return true;
  if (labels[LABEL_OWNER_PID_NS] !== here.pidNs) return false;
  return !alive(pid);
}
