import { readFileSync, readlinkSync } from "node:fs";
import { hostname } from "node:os";
import {
  createLabels,
  LABEL_OWNER_BOOT_ID,
  LABEL_OWNER_HOST,
  LABEL_OWNER_PID,
  LABEL_OWNER_PID_NS,
} from "../../container/labels.js";

export const LABEL_ISOLATION = "dev.harness.isolation";
/**
 * A copy kept until its work lands or is dropped (docs/copy-mode.md): the id `harness apply ID` and
 * `harness rm ID` take, and its record's name (copy/kept/kept-copy-record.ts). A copy without it
 * (a batch's task, a replay, an older harness) is never kept.
 */
export const LABEL_COPY_ID = "dev.harness.copy-id";

/** The harness process as owner labels name it; "" where something cannot be read. */
export interface OwnerIdentity {
  /** Hostname and /etc/machine-id: another machine (or container) on the same engine differs. */
  host: string;
  /** /proc/sys/kernel/random/boot_id: new at every boot, when every earlier process is gone. */
  bootId: string;
  /** /proc/self/ns/pid: a pid is only meaningful inside its own pid namespace. */
  pidNs: string;
  pid: number;
}

function readOr(read: () => string): string {
  try {
    return read().trim();
  } catch {
    return "";
  }
}

export function ownerIdentity(): OwnerIdentity {
  const machineId = readOr(() => readFileSync("/etc/machine-id", "utf8"));
  return {
    host: `${hostname()} ${machineId}`.trim(),
    bootId: readOr(() => readFileSync("/proc/sys/kernel/random/boot_id", "utf8")),
    pidNs: readOr(() => readlinkSync("/proc/self/ns/pid")),
    pid: process.pid,
  };
}

/**
 * Labels of a copy-mode container. Its workspace label is `copy:<path>`, so a bind-mode run of the
 * same workspace (which finds its container by that label) never reuses or removes it. The owner
 * labels let a later run tell a container whose harness process died without removing it.
 */
export function copyLabels(
  workspace: string,
  configHash: string,
  sessionId: string,
  keepId?: string,
): Record<string, string> {
  return {
    ...(keepId === undefined ? {} : { [LABEL_COPY_ID]: keepId }),
    ...createLabels(`copy:${workspace}`, configHash, sessionId),
    [LABEL_ISOLATION]: "copy",
    ...ownerLabels(),
  };
}

/** The labels that name this harness process as a container's creator (labels/owner-gone.ts reads them). */
export function ownerLabels(owner: OwnerIdentity = ownerIdentity()): Record<string, string> {
  return {
    [LABEL_OWNER_HOST]: owner.host,
    [LABEL_OWNER_BOOT_ID]: owner.bootId,
    [LABEL_OWNER_PID_NS]: owner.pidNs,
    [LABEL_OWNER_PID]: String(owner.pid),
  };
}
