/**
 * The sandbox image: built from the repository's sandbox/ folder, tagged by a hash of that folder so
 * an edit rebuilds and an unchanged folder never does. The Dockerfile has two targets: the default,
 * with the toolchains (docs/toolchains.md), and `minimal`, harness's machinery and little else, on
 * which the engines' conformance tests run without importing gigabytes into each engine.
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import createDebug from "debug";
import type Docker from "dockerode";
import { pack } from "tar-stream";
import { SandboxError } from "../../../errors.js";
import { detectEngineKind } from "../engine/engine-kind.js";

const log = createDebug("harness:docker");

export const IMAGE_REPOSITORY = "harness-sandbox";

/** The sandbox/ folder that ships with harness, found from this module's location (src or bundle). */
export function sandboxContextDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, "sandbox", "Dockerfile")) && existsSync(join(dir, "package.json"))) {
      return join(dir, "sandbox");
    }
    const parent = dirname(dir);
    if (parent === dir)
      throw new SandboxError("cannot find harness's sandbox/Dockerfile next to its package.json");
    dir = parent;
  }
}

function listFiles(root: string, dir = root): string[] {
  return readdirSync(dir, { withFileTypes: true })
    .flatMap((entry) => {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) return listFiles(root, path);
      return entry.isFile() ? [relative(root, path)] : [];
    })
    .sort();
}

/** Hash over every file's path, mode and content. */
export function contextHash(dir: string): string {
  const hash = createHash("sha256");
  for (const file of listFiles(dir)) {
    const full = join(dir, file);
    hash.update(`${file}\0${statSync(full).mode & 0o777}\0`);
    hash.update(readFileSync(full));
    hash.update("\0");
  }
  return hash.digest("hex").slice(0, 12);
}

export type BuildProgress = (line: string) => void;

/** Which target of sandbox/Dockerfile: the default one with the toolchains, or `minimal`. */
export type SandboxImageVariant = "toolchains" | "minimal";

/** The tag of `variant` for the sandbox/ folder `dir`: the default's is the bare hash. */
export function sandboxImageTag(dir: string, variant: SandboxImageVariant = "toolchains"): string {
  return `${IMAGE_REPOSITORY}:${contextHash(dir)}${variant === "minimal" ? "-minimal" : ""}`;
}

/** When the build failed for want of its base image, how to get it onto this engine. */
async function baseImageHint(docker: Docker, text: string): Promise<string> {
  if (!/pull access denied|failed to resolve|not found|manifest unknown|no such host|dial tcp/i.test(text))
    return "";
  // Podman builds from its own image store, which Docker's base image does not reach by itself.
  const engine = await detectEngineKind(docker).catch(() => "docker");
  return engine === "podman"
    ? " The base image is not in Podman's store and could not be pulled: copy it from Docker ('docker save debian:bookworm-slim | podman load', or 'bash scripts/ensure-podman.sh' as root)."
    : " The base image could not be pulled: run 'npm run base-image' to build it from Debian's packages.";
}

/**
 * Returns the tag of the sandbox image for `dir`, building it first if no image has that tag.
 * The build uses the host's network so its apt step can reach Debian's packages and its download
 * steps the registries (each download checked against a hash the Dockerfile pins).
 */
export async function ensureSandboxImage(
  docker: Docker,
  onProgress: BuildProgress = () => {},
  dir: string = sandboxContextDir(),
  variant: SandboxImageVariant = "toolchains",
): Promise<string> {
  const tag = sandboxImageTag(dir, variant);
  try {
    await docker.getImage(tag).inspect();
    return tag;
  } catch {
    // Not built yet.
  }
  onProgress(`building sandbox image ${tag} from ${dir}`);
  const context = pack();
  for (const file of listFiles(dir)) {
    const full = join(dir, file);
    context.entry({ name: file, mode: statSync(full).mode & 0o777 }, readFileSync(full));
  }
  context.finalize();
  const logLines: string[] = [];
  // tar-stream 3 packs are streamx streams; Readable.from gives dockerode the Node stream it expects.
  const output = await docker.buildImage(Readable.from(context), {
    t: tag,
    // Without a target the last stage is built: the toolchains.
    ...(variant === "minimal" ? { target: "minimal" } : {}),
    networkmode: "host",
    rm: true,
    forcerm: true,
  });
  await new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(
      output,
      (error: Error | null) => (error ? reject(error) : resolve()),
      (event: { stream?: string; error?: string; status?: string }) => {
        const text = (event.stream ?? event.status ?? "").trimEnd();
        if (text) {
          logLines.push(text);
          if (logLines.length > 200) logLines.shift();
          // One call per line: a line is what the callback prints (and escapes) as one.
          for (const line of text.split("\n")) onProgress(line);
        }
        if (event.error) logLines.push(event.error);
      },
    );
  }).catch(async (error: Error) => {
    const tail = logLines.slice(-20).join("\n");
    const hint = await baseImageHint(docker, `${error.message}\n${tail}`);
    throw new SandboxError(`building the sandbox image failed: ${error.message}.${hint}\n${tail}`, {
      cause: error,
    });
  });
  // followProgress reports a failed step as an error event, not always as an error: check the result.
  try {
    await docker.getImage(tag).inspect();
  } catch (error) {
    const tail = logLines.slice(-20).join("\n");
    const hint = await baseImageHint(docker, tail);
    throw new SandboxError(`building the sandbox image failed.${hint}\n${tail}`, { cause: error });
  }
  log("built %s", tag);
  return tag;
}
