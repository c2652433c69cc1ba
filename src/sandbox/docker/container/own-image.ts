/**
 * Whether an image is harness's own: one harness built from its own sandbox/ (either target of
 * sandbox/Dockerfile, image.ts), told by image id, never by name or label (a devcontainer's
 * `FROM harness-sandbox:…` inherits both, and can replace any binary in it).
 *
 * Why it matters: harness's machinery (PID 1, the executor, the relay) runs the image's own
 * `/bin/sh`, `sleep` and `python3`. As root it may run only binaries harness shipped; in any other
 * image it runs as the commands' uid (container-spec.ts `rootMachinery`), so that whatever the
 * image's binaries do, they do it as the run, and the run's end removes them (bind-isolation.ts).
 */
import type Docker from "dockerode";
import { ensureSandboxImage, type SandboxImageVariant, sandboxContextDir, sandboxImageTag } from "./image.js";

const VARIANTS: readonly SandboxImageVariant[] = ["toolchains", "minimal"];

async function idOf(docker: Docker, reference: string): Promise<string | undefined> {
  try {
    return (await docker.getImage(reference).inspect()).Id;
  } catch {
    return undefined;
  }
}

/** The tag of an own image the engine has with id `imageId`, or undefined when it is not harness's. */
export async function ownImageTag(
  docker: Docker,
  imageId: string,
  dir: string = sandboxContextDir(),
): Promise<string | undefined> {
  for (const variant of VARIANTS) {
    const tag = sandboxImageTag(dir, variant);
    if ((await idOf(docker, tag)) === imageId) return tag;
  }
  return undefined;
}

/**
 * An image of harness's own for a helper container that runs as root (the package cache's keeper):
 * `image` itself when it is one, else either own image the engine has, else the minimal one, built.
 */
export async function machineryImage(
  docker: Docker,
  image: string,
  imageId: string,
  onProgress?: (line: string) => void,
): Promise<string> {
  if ((await ownImageTag(docker, imageId)) !== undefined) return image;
  const dir = sandboxContextDir();
  for (const variant of VARIANTS) {
    const tag = sandboxImageTag(dir, variant);
    if ((await idOf(docker, tag)) !== undefined) return tag;
  }
  return ensureSandboxImage(docker, onProgress, dir, "minimal");
}
