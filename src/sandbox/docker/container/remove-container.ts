/** Removing a container: the one way every part of the backend does it. */
import type Docker from "dockerode";
import { dockerStatus, sandboxError } from "../exec/docker-errors.js";

/**
 * Removes `container` with force (a running one is killed first) and its anonymous volumes (a
 * copy-mode container keeps the workspace copy in one, which must not outlive it).
 * Contract: resolves `true` when this call removed it and `false` when it was already gone (404);
 * rejects with a `SandboxError` (`sandboxError`) that carries the container id on any other failure.
 */
export async function removeContainer(container: Docker.Container): Promise<boolean> {
  try {
    await container.remove({ force: true, v: true });
    return true;
  } catch (error) {
    if (dockerStatus(error) === 404) return false;
    throw sandboxError("removing the sandbox container failed", error, container.id);
  }
}
