/**
 * Kept copies on Docker (docs/copy-mode.md): a copy-mode container whose changes were neither
 * applied nor dropped when its session ended (or whose harness was killed) stays, stopped, with its
 * volume, labelled with its id. `harness ps` lists them, `harness apply ID` lands one through the
 * same review and journaled apply as a session's end (copy-container.ts), `harness rm ID`
 * drops it. Only containers harness labelled as kept copies are ever found here.
 */
import type Docker from "dockerode";
import { ConfigError } from "../../../errors.js";
import { stampAlive } from "../../../state/process-stamp.js";
import {
  type KeptCopyRecord,
  keptCopiesDir,
  planOfKeptCopy,
  readKeptCopy,
  removeKeptCopy,
  setKeptCopyState,
} from "../../copy/kept/kept-copy-record.js";
import type { ApplyResult, CopiedWorkspace, WorkspaceChanges, WorkspaceEntry } from "../../sandbox.js";
import { LABEL_MANAGED, LABEL_WORKSPACE } from "../container/labels.js";
import { removeContainer } from "../container/remove-container.js";
import { sandboxError } from "../exec/docker-errors.js";
import { applyContainerChanges, type ContainerCopy, exportContainerChanges } from "./copy-container.js";
import { LABEL_COPY_ID, LABEL_ISOLATION } from "./labels/copy-container-labels.js";
import { isOrphanedCopy } from "./orphaned-copies.js";
import { workspaceEntries } from "./workspace-entries.js";

/** The session-end line of a kept copy. */
export function keptCopyLine(id: string): string {
  return `the sandbox's copy is kept as ${id}: harness apply ${id} lands its changes, harness rm ${id} drops them`;
}

export interface KeptCopy {
  id: string;
  containerId: string;
  /** The host workspace it is a copy of. */
  workspace: string;
  /** When the container was made. */
  created: Date;
  /** Docker's state: "exited" once kept, "running" while its session goes on. */
  state: string;
  /** Its harness process still runs (or runs on another machine): it is a live session's, not kept. */
  inUse: boolean;
}

/**
 * Every copy-mode container harness labelled to be kept, newest first. Whether its session still
 * runs is its owner labels' pid, unless its record's stamp (the pid's start time too) says that
 * process is gone: a pid reused by another process does not hold a kept copy hostage.
 */
export async function listKeptCopies(
  docker: Docker,
  env: NodeJS.ProcessEnv = process.env,
): Promise<KeptCopy[]> {
  const found = await docker
    .listContainers({
      all: true,
      filters: { label: [`${LABEL_MANAGED}=true`, `${LABEL_ISOLATION}=copy`, LABEL_COPY_ID] },
    })
    .catch((error: unknown) => {
      throw sandboxError("listing sandbox containers failed", error);
    });
  const kept = await Promise.all(
    found.flatMap((c) => {
      const id = c.Labels[LABEL_COPY_ID];
      if (id === undefined) return [];
      const inUse = async () => {
        if (isOrphanedCopy(c.Labels)) return false;
        const owner = (await readKeptCopy(id, env))?.owner;
        return owner === undefined || stampAlive(owner);
      };
      return [
        inUse().then((used) => ({
          id,
          containerId: c.Id,
          workspace: (c.Labels[LABEL_WORKSPACE] ?? "").replace(/^copy:/, ""),
          created: new Date(c.Created * 1000),
          state: c.State,
          inUse: used,
        })),
      ];
    }),
  );
  return kept.sort((a, b) => b.created.getTime() - a.created.getTime());
}

/** The kept copy `id` names: the id itself or a unique prefix of it. */
export async function findKeptCopy(docker: Docker, id: string): Promise<KeptCopy> {
  const all = await listKeptCopies(docker);
  const exact = all.filter((c) => c.id === id);
  const matches = exact.length > 0 ? exact : all.filter((c) => id !== "" && c.id.startsWith(id));
  const [first, second] = matches;
  if (first === undefined) {
    throw new ConfigError(`no kept copy '${id}' (harness ps lists the kept copies)`);
  }
  if (second !== undefined) {
    throw new ConfigError(
      `'${id}' names more than one kept copy (${first.id}, ${second.id}…): give more of it`,
    );
  }
  return first;
}

/** Removes a kept copy: its container, its volume (the sandbox's work) and its record. */
export async function dropKeptCopy(
  docker: Docker,
  kept: KeptCopy,
  env: NodeJS.ProcessEnv = process.env,
): Promise<boolean> {
  const removed = await removeContainer(docker.getContainer(kept.containerId));
  await removeKeptCopy(kept.id, env);
  return removed;
}

/** A kept copy opened to be reviewed and applied: the same `CopiedWorkspace` a session's end uses. */
// Checkpoints never read a kept copy: it has no listing of its own (copy-snapshot.ts reads a live session's).
export interface OpenedKeptCopy extends Omit<CopiedWorkspace, "list" | "fetch"> {
  readonly record: KeptCopyRecord;
  /** After the review: removes the copy when it was settled (applied, or nothing to land). */
  close(): Promise<boolean>;
}

/**
 * Opens `kept` for `harness apply`: refused while its session still runs, or without the record that
 * says what was copied in (without it, a file the user made since would look deleted by the sandbox).
 */
export async function openKeptCopy(
  docker: Docker,
  kept: KeptCopy,
  onProgress: (line: string) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<OpenedKeptCopy> {
  if (kept.inUse) {
    throw new ConfigError(
      `the copy ${kept.id} belongs to a harness session that is still running (or one on another machine): it is applied or kept when that session ends`,
    );
  }
  const record = await readKeptCopy(kept.id, env);
  if (record === undefined) {
    throw new ConfigError(
      `no record of the kept copy ${kept.id} in ${keptCopiesDir(env)} (made with another state directory?): without it its changes cannot be told from yours; harness rm ${kept.id} drops it`,
    );
  }
  if (record.state !== "open") {
    throw new ConfigError(
      `the copy ${kept.id} holds none of the sandbox's work (${record.state === "opening" ? "harness stopped while the workspace was copied in" : "its changes were already applied or dropped"}): harness rm ${kept.id} removes it`,
    );
  }
  const plan = await planOfKeptCopy(record, env).catch((error: unknown) => {
    throw new ConfigError(
      `the record of the kept copy ${kept.id} cannot be read (${(error as Error).message}): harness rm ${kept.id} drops it`,
    );
  });
  const copy: ContainerCopy = {
    docker,
    container: docker.getContainer(kept.containerId),
    plan,
    workdir: record.workdir,
    protect: record.protect,
    onProgress,
  };
  let settled = false;
  return {
    record,
    exportChanges: (): Promise<WorkspaceChanges> => exportContainerChanges(copy),
    applyChanges: (reviewed: WorkspaceChanges): Promise<ApplyResult> => applyContainerChanges(copy, reviewed),
    entries: (): AsyncIterable<WorkspaceEntry> => workspaceEntries(copy.container, copy.workdir),
    settle: () => {
      settled = true;
    },
    close: async () => {
      if (!settled) return false;
      await setKeptCopyState(record, "settled", env);
      await dropKeptCopy(docker, kept, env);
      return true;
    },
  };
}
