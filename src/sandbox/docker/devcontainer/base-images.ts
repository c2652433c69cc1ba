/**
 * The images a devcontainer Dockerfile reads (dockerfile-fetches.ts), looked up on the engine before
 * the build: a missing one would be pulled by the engine on the host's network, and a FROM image's
 * ONBUILD triggers (from its config) run in this build as if written after the FROM, so each is
 * checked like any other instruction of the Dockerfile.
 */
import type Docker from "dockerode";
import { dockerStatus, sandboxError } from "../exec/docker-errors.js";
import { type NeededImage, triggerImagesNeeded } from "./dockerfile-fetches.js";
import { DockerfileRefusal } from "./dockerfile-syntax.js";

/** Throws DockerfileRefusal for an image not on the engine, or a trigger that would fetch. */
export async function checkImagesOnEngine(docker: Docker, needed: readonly NeededImage[]): Promise<void> {
  // Stage names are not known here; a trigger's COPY --from must then name an image on the engine.
  const queue = [...needed];
  for (let image = queue.shift(); image !== undefined; image = queue.shift()) {
    const info = await docker
      .getImage(image.ref)
      .inspect()
      .catch((error: unknown) => {
        if (dockerStatus(error) === 404) return undefined;
        throw sandboxError(`looking up image '${image.ref}' on the engine failed`, error);
      });
    if (info === undefined) {
      throw new DockerfileRefusal(
        image.line,
        `${image.use} ${image.ref}: the image is not on the engine, which would pull it itself, on the host's network; pull or build it first (the build fetches nothing)`,
      );
    }
    if (image.use !== "FROM") continue;
    for (const trigger of info.Config?.OnBuild ?? []) {
      try {
        queue.push(...triggerImagesNeeded(trigger, image.line, []));
      } catch (error) {
        if (!(error instanceof DockerfileRefusal)) throw error;
        throw new DockerfileRefusal(
          image.line,
          `FROM ${image.ref}: the image's ONBUILD trigger '${trigger}' runs in this build: ${error.reason}`,
        );
      }
    }
  }
}
