/** Listing and removing the containers harness made (`harness ps`, `harness rm`). */
import type Docker from "dockerode";
import { LABEL_MANAGED, LABEL_VERSION, LABEL_WORKSPACE } from "./labels.js";
import { removeContainer } from "./remove-container.js";

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

/** Every harness container, or those serving `workspace` (bind mode, and copy mode's `copy:` label). */
export async function listHarnessContainers(docker: Docker, workspace?: string): Promise<HarnessContainer[]> {
  const found = await docker.listContainers({ all: true, filters: { label: [`${LABEL_MANAGED}=true`] } });
  const serves = (label: string | undefined) =>
    workspace === undefined || label === workspace || label === `copy:${workspace}`;
  return found
    .filter((c) => serves(c.Labels[LABEL_WORKSPACE]))
    .map((c) => ({
      id: c.Id.slice(0, 12),
      name: (c.Names[0] ?? "").replace(/^\//, ""),
      workspace: c.Labels[LABEL_WORKSPACE] ?? "",
      state: c.State,
      status: c.Status,
      image: c.Image,
      version: c.Labels[LABEL_VERSION] ?? "",
    }));
}

/** Removes the given harness containers (`removeContainer`); returns those this call removed. */
export async function removeHarnessContainers(
  docker: Docker,
  containers: HarnessContainer[],
): Promise<HarnessContainer[]> {
  const removed: HarnessContainer[] = [];
  for (const c of containers) {
    if (await removeContainer(docker.getContainer(c.id))) removed.push(c);
  }
  return removed;
}
