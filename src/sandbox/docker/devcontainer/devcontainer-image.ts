/**
 * devcontainer.json's `build`: the Dockerfile built on the engine, tagged by a hash of its context
 * so an unchanged one is never built twice. The Dockerfile comes from the workspace, which the
 * sandbox may have written: its context is read once through held descriptors (build-context.ts),
 * it builds with network mode "none" (no RUN step reaches anything; the FROM image must already be
 * on the engine) and the engine's builder confines it to the context.
 */
import { Readable } from "node:stream";
import createDebug from "debug";
import type Docker from "dockerode";
import { pack } from "tar-stream";
import { SandboxError } from "../../../errors.js";
import type { DevcontainerBuild } from "../../sandbox-request.js";
import { type BuildContext, readBuildContext } from "./build-context.js";

const log = createDebug("harness:docker");

export const DEVCONTAINER_IMAGE_REPOSITORY = "harness-devcontainer";

/** How many left-out paths the line before a build names. */
const LEFT_OUT_SHOWN = 5;

/** The image's tag, built first if no image has it. `owner` is the workspace's "uid:gid". */
export async function ensureDevcontainerImage(
  docker: Docker,
  build: DevcontainerBuild,
  owner: string,
  onProgress: (line: string) => void = () => {},
): Promise<string> {
  const context = await readBuildContext(build, owner);
  const tag = `${DEVCONTAINER_IMAGE_REPOSITORY}:${context.hash}`;
  if (await imageExists(docker, tag)) return tag;
  if (context.leftOut.length > 0) {
    const shown = context.leftOut.slice(0, LEFT_OUT_SHOWN).map((e) => `${e.path} (${e.reason})`);
    const more = context.leftOut.length - shown.length;
    onProgress(
      `devcontainer build context ${build.context}: left out ${shown.join(", ")}${more > 0 ? ` and ${more} more` : ""}`,
    );
  }
  onProgress(`building devcontainer image ${tag} from ${build.dockerfile} (no network)`);
  const output = await docker.buildImage(Readable.from(tarOf(context)), {
    t: tag,
    dockerfile: context.dockerfile,
    buildargs: { ...build.args },
    ...(build.target === undefined ? {} : { target: build.target }),
    networkmode: "none",
    pull: false,
    rm: true,
    forcerm: true,
  });
  const tail: string[] = [];
  const failed = await new Promise<Error | undefined>((resolve) => {
    docker.modem.followProgress(
      output,
      (error: Error | null) => resolve(error ?? undefined),
      (event: { stream?: string; error?: string }) => {
        const text = (event.stream ?? "").trimEnd();
        for (const line of text === "" ? [] : text.split("\n")) {
          onProgress(line);
          tail.push(line);
        }
        if (event.error) tail.push(event.error);
        tail.splice(0, Math.max(0, tail.length - 20));
      },
    );
  });
  // A failed step comes as an error event, not always as an error: the tag tells.
  if (failed !== undefined || !(await imageExists(docker, tag))) {
    throw new SandboxError(
      `building the devcontainer image from ${build.dockerfile} failed${failed ? `: ${failed.message}` : ""} (the build has no network: its FROM image must already be on the engine)\n${tail.join("\n")}`,
      { cause: failed },
    );
  }
  log("built %s", tag);
  return tag;
}

async function imageExists(docker: Docker, tag: string): Promise<boolean> {
  return docker
    .getImage(tag)
    .inspect()
    .then(() => true)
    .catch(() => false);
}

function tarOf(context: BuildContext) {
  const tar = pack();
  for (const entry of context.entries) {
    if (entry.type === "file") tar.entry({ name: entry.name, mode: entry.mode }, entry.content);
    else if (entry.type === "directory") tar.entry({ name: entry.name, type: "directory", mode: entry.mode });
    else tar.entry({ name: entry.name, type: "symlink", linkname: entry.linkname });
  }
  tar.finalize();
  return tar;
}
