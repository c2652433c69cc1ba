/** The containers of a benchmark's workspace, found by label; shared by exec-bench and engines-bench. */
import type Docker from "dockerode";
import { LABEL_WORKSPACE } from "../src/sandbox/docker/labels.js";

export async function removeContainers(docker: Docker, workspace: string): Promise<void> {
  const found = await docker.listContainers({
    all: true,
    filters: { label: [`${LABEL_WORKSPACE}=${workspace}`] },
  });
  for (const info of found)
    await docker
      .getContainer(info.Id)
      .remove({ force: true })
      .catch(() => {});
}

/** The workspace's container as `id state`, or "none". */
export async function containerOf(docker: Docker, workspace: string): Promise<string> {
  const [found] = await docker.listContainers({
    all: true,
    filters: { label: [`${LABEL_WORKSPACE}=${workspace}`] },
  });
  return found ? `${found.Id} ${found.State}` : "none";
}

/** How a run got its container, from what was there before and after: reused, started or created. */
export function acquiredBy(before: string, after: string): string {
  const [idBefore, stateBefore] = before.split(" ");
  if (idBefore !== after.split(" ")[0]) return "created";
  return stateBefore === "running" ? "reused" : "started";
}

/**
 * Pids (on the engine's host, from `top`) of the executors running in the container: the python3
 * that src/sandbox/docker/executor/executor.ts starts, not the next call's process it forks ahead
 * (same command line, its parent an executor). A changed set means an executor was restarted.
 */
export async function executorPids(container: Docker.Container): Promise<string[]> {
  const top = (await container.top({ ps_args: "-o pid,ppid,args" })) as { Processes?: string[][] };
  const rows = (top.Processes ?? []).filter((row) => / harness-executor /.test(row[2] ?? ""));
  const pids = new Set(rows.map((row) => row[0]));
  return rows.filter((row) => !pids.has(row[1])).map((row) => row[0] ?? "");
}
