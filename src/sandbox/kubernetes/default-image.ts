import { sandboxContextDir, sandboxImageTag } from "../docker/container/image.js";

/** The default image: harness's own, by the tag `ensureSandboxImage` gives it (loaded into the nodes). */
export function defaultPodImage(): string {
  return sandboxImageTag(sandboxContextDir());
}
