/**
 * Labels on every container harness creates: how it finds a workspace's container again, tells its
 * own containers from everyone else's, and notices when one was made with other settings.
 * Anchor: testcontainers-node `utils/labels.ts`.
 */
import { HARNESS_VERSION } from "../version.js";

export const LABEL_MANAGED = "dev.harness.managed";
export const LABEL_WORKSPACE = "dev.harness.workspace";
export const LABEL_VERSION = "dev.harness.version";
export const LABEL_CONFIG_HASH = "dev.harness.config-hash";
export const LABEL_SESSION = "dev.harness.session-id";

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
