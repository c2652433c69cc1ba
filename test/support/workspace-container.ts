/** Finds the sandbox container a CLI run made for a workspace (by its label), to inspect or remove it. */
import { realpathSync } from "node:fs";
import Docker from "dockerode";
import { LABEL_WORKSPACE } from "../../src/sandbox/docker/container/labels.js";

/** Ids of the containers labelled with `workspace` (its real path, as harness labels it). */
export async function workspaceContainers(workspace: string): Promise<string[]> {
  const label = [`${LABEL_WORKSPACE}=${realpathSync(workspace)}`];
  const found = await new Docker().listContainers({ all: true, filters: { label } });
  return found.map((c) => c.Id);
}

/** The command lines of every process running in the workspace's container (`docker top`). */
export async function workspaceProcesses(workspace: string): Promise<string[]> {
  const [id] = await workspaceContainers(workspace);
  if (id === undefined) throw new Error(`no container for workspace ${workspace}`);
  const top = (await new Docker().getContainer(id).top({ ps_args: "-eo pid,args" })) as {
    Processes?: string[][];
  };
  return (top.Processes ?? []).map((row) => row.join(" "));
}

/**
 * Removes the workspace's containers: CLI runs leave them for the next run, and copy mode keeps a copy
 * whose changes nobody applied or dropped (with its volume); tests need neither.
 */
export async function removeWorkspaceContainers(workspace: string): Promise<void> {
  const docker = new Docker();
  const label = [`${LABEL_WORKSPACE}=copy:${realpathSync(workspace)}`];
  const copies = (await docker.listContainers({ all: true, filters: { label } })).map((c) => c.Id);
  for (const id of [...(await workspaceContainers(workspace)), ...copies]) {
    await docker
      .getContainer(id)
      .remove({ force: true, v: true })
      .catch(() => {});
  }
}

/** `await using` this after `using ws = makeWorkspace()`: the container goes before the directory does. */
export function removesContainerOf(workspace: string): AsyncDisposable {
  return { [Symbol.asyncDispose]: () => removeWorkspaceContainers(workspace) };
}
