/**
 * devcontainer.json's `build`: the Dockerfile built on the engine, tagged by a hash of its context
 * so an unchanged one is never built twice. The Dockerfile comes from the workspace, which the
 * sandbox may have written, so the build is sealed: its context is read once through held
 * descriptors (build-context.ts), the Dockerfile is refused before any build when it names anything
 * the engine would fetch on the host's network (dockerfile-fetches.ts, base-images.ts), its RUN
 * steps get network mode "none", and the engine's classic builder (never BuildKit, which would pull
 * a frontend or open a session) confines it to the context.
 */
import { Readable } from "node:stream";
import createDebug from "debug";
import type Docker from "dockerode";
import { pack } from "tar-stream";
import { ConfigError, SandboxError } from "../../../errors.js";
import type { DevcontainerBuild } from "../../sandbox-request.js";
import { checkImagesOnEngine } from "./base-images.js";
import { type BuildContext, readBuildContext } from "./build-context.js";
import { imagesNeeded } from "./dockerfile-fetches.js";
import { DockerfileRefusal } from "./dockerfile-syntax.js";

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
  const context = readBuildContext(build, owner);
  await refuseFetches(docker, build, context);
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
    // The classic builder, said outright: "2" (BuildKit) would open a session and honour `# syntax`.
    version: "1",
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

/**
 * Refuses, in one line and before any build, a Dockerfile that names anything the engine would
 * fetch: checked on the very bytes that go into the context.
 */
async function refuseFetches(docker: Docker, build: DevcontainerBuild, context: BuildContext): Promise<void> {
  try {
    await checkImagesOnEngine(docker, imagesNeeded(context.dockerfileContent, build.args));
  } catch (error) {
    if (!(error instanceof DockerfileRefusal)) throw error;
    const at = error.line === 0 ? build.dockerfile : `${build.dockerfile}:${error.line}`;
    throw new ConfigError(`devcontainer build refused before it started: ${at}: ${error.reason}`);
  }
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
