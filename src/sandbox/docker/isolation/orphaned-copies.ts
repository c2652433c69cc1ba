import createDebug from "debug";
import type Docker from "dockerode";
import { isProcessAlive } from "../../../state/liveness.js";
import { type KeptCopyRecord, readKeptCopy, removeKeptCopy } from "../../copy/kept/kept-copy-record.js";
import { LABEL_MANAGED, LABEL_WORKSPACE } from "../container/labels.js";
import { removeContainer } from "../container/remove-container.js";
import { stopCopyContainer } from "./copy-container.js";
import {
  LABEL_COPY_ID,
  LABEL_ISOLATION,
  type OwnerIdentity,
  ownerIdentity,
} from "./labels/copy-container-labels.js";
import { ownerGone } from "./labels/owner-gone.js";

const log = createDebug("harness:docker");

/**
 * How long a kept copy whose changes were never applied nor dropped stays (docs/copy-mode.md): by
 * age only, never by count, so that a burst of kept copies never takes a recent one with it; each is
 * bounded in size by the copy limit.
 */
export const KEPT_COPY_RETENTION_DAYS = 14;
const RETENTION_MS = KEPT_COPY_RETENTION_DAYS * 24 * 3600 * 1000;

/**
 * Whether the harness process that created a copy-mode container is gone (owner-gone.ts: only a
 * container made on this machine is judged; a container without owner labels never is).
 */
export function isOrphanedCopy(
  labels: Record<string, string>,
  here: OwnerIdentity = ownerIdentity(),
  alive: (pid: number) => boolean = isProcessAlive,
): boolean {
  return labels[LABEL_ISOLATION] === "copy" && ownerGone(labels, here, alive);
}

/**
 * What the sweep does with a copy whose harness process is gone. "remove": it cannot hold work
 * to land (not a kept copy: a batch's task, a replay, an older harness; or its record says no command
 * ever ran in it, or its changes were settled). "expired": a kept copy past retention. "keep": it may
 * hold the sandbox's unapplied work, including a copy without a record this state directory knows.
 */
export function orphanVerdict(
  labels: Record<string, string>,
  createdSeconds: number,
  record: KeptCopyRecord | undefined,
  now: number = Date.now(),
): "remove" | "expired" | "keep" {
  if (labels[LABEL_COPY_ID] === undefined) return "remove";
  if (record?.state === "opening" || record?.state === "settled") return "remove";
  return now - createdSeconds * 1000 > RETENTION_MS ? "expired" : "keep";
}

/**
 * At every copy-mode open: copy-mode containers of any workspace whose harness process is gone.
 * Those that cannot hold unapplied work are removed with their volumes (a second Ctrl-C exits
 * before `await using` can); kept copies past retention are removed with one line each; the others
 * are kept, stopped if something left them running (nothing of a sandbox runs unwatched). Best
 * effort: a failure here is logged, never fatal. Returns the ids removed.
 */
export async function sweepOrphanedCopies(
  docker: Docker,
  onProgress?: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
  now: number = Date.now(),
): Promise<string[]> {
  const removed: string[] = [];
  try {
    const found = await docker.listContainers({
      all: true,
      filters: { label: [`${LABEL_MANAGED}=true`, `${LABEL_ISOLATION}=copy`] },
    });
    const here = ownerIdentity();
    for (const info of found.filter((c) => isOrphanedCopy(c.Labels, here))) {
      const id = info.Labels[LABEL_COPY_ID];
      const record = id === undefined ? undefined : await readKeptCopy(id, env);
      const verdict = orphanVerdict(info.Labels, info.Created, record, now);
      const container = docker.getContainer(info.Id);
      try {
        if (verdict === "keep") {
          if (info.State === "running" || info.State === "paused") await stopCopyContainer(container);
          continue;
        }
        log("removing copy-mode container %s (%s)", info.Id.slice(0, 12), verdict);
        if (await removeContainer(container)) removed.push(info.Id);
        if (id !== undefined) await removeKeptCopy(id, env);
        if (verdict === "expired") {
          const workspace = (info.Labels[LABEL_WORKSPACE] ?? "").replace(/^copy:/, "");
          onProgress?.(
            `removed the kept copy ${id} of ${workspace}: its changes were never applied, and it was older than ${KEPT_COPY_RETENTION_DAYS} days (retention)`,
          );
        }
      } catch (error) {
        log("%s", (error as Error).message);
      }
    }
  } catch (error) {
    log("looking for orphaned copy-mode containers failed: %s", error);
  }
  return removed;
}
