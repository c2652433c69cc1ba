/**
 * Labels on every container harness creates: how it finds a workspace's container again, tells its
 * own containers from everyone else's, and notices when one was made with other settings.
 */
import { HARNESS_VERSION } from "../../../version.js";

export const LABEL_MANAGED = "dev.harness.managed";
export const LABEL_WORKSPACE = "dev.harness.workspace";
export const LABEL_VERSION = "dev.harness.version";
export const LABEL_CONFIG_HASH = "dev.harness.config-hash";
export const LABEL_SESSION = "dev.harness.session-id";
/** Made ahead of its task by a batch's warm pool (warm/warm-container.ts); the value names the batch. */
export const LABEL_WARM_POOL = "dev.harness.warm-pool";
/** Copy mode: who created the container, so a later run can remove it once that process is gone. */
export const LABEL_OWNER_HOST = "dev.harness.owner-host";
export const LABEL_OWNER_BOOT_ID = "dev.harness.owner-boot-id";
export const LABEL_OWNER_PID_NS = "dev.harness.owner-pid-ns";
export const LABEL_OWNER_PID = "dev.harness.owner-pid";

export function createLabels(
  workspace: string,
  configHash: string,
  sessionId: string,
): Record<string, string> {
  return {
    [LABEL_MANAGED]: "true",
    [LABEL_WORKSPACE]: workspace,
    [LABEL_VERSION]: HARNESS_VERSION,
    [LABEL_CONFIG_HASH]: configHash,
    [LABEL_SESSION]: sessionId,
  };
}
