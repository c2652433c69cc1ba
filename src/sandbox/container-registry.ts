/** Listing and removing the containers harness made (`harness ps`, `harness rm`). */
import type Docker from "dockerode";
import { LABEL_MANAGED, LABEL_VERSION, LABEL_WORKSPACE } from "./labels.js";

export interface HarnessContainer {
  id: string;
  name: string;
  /** Host path of the workspace it serves. */
  workspace: string;
  /** "running", "exited", ... */
  state: string;
  /** Docker's human status, e.g. "Up 5 minutes". */
  status: string;
  image: string;
  version: string;
}

export async function listHarnessContainers(docker: Docker, workspace?: string): Promise<HarnessContainer[]> {
  const label = [`${LABEL_MANAGED}=true`];
  if (workspace) label.push(`${LABEL_WORKSPACE}=${workspace}`);
  const found = await docker.listContainers({ all: true, filters: { label } });
  return found.map((c) => ({
    id: c.Id.slice(0, 12),
    name: (c.Names[0] ?? "").replace(/^\//, ""),
    workspace: c.Labels[LABEL_WORKSPACE] ?? "",
    state: c.State,
    status: c.Status,
    image: c.Image,
    version: c.Labels[LABEL_VERSION] ?? "",
  }));
}

/** Removes (force) the given harness containers; returns the ones removed. */
export async function removeHarnessContainers(
  docker: Docker,
  containers: HarnessContainer[],
): Promise<HarnessContainer[]> {
  const removed: HarnessContainer[] = [];
  for (const c of containers) {
    try {
      await docker.getContainer(c.id).remove({ force: true });
      removed.push(c);
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode !== 404) throw error;
    }
  }
  return removed;
}
