/**
 * The egress tests' image: the sandbox image plus npm, pip, curl (test/support/images/net-tools).
 * Tagged by a hash of its Dockerfile and the base tag, so it is built once per base and reused.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import type Docker from "dockerode";
import { pack } from "tar-stream";

export const NET_TOOLS_REPOSITORY = "harness-net-tools";

const DOCKERFILE = fileURLToPath(new URL("../images/net-tools/Dockerfile", import.meta.url));

/** The tag the image has (or will have) on top of `baseTag`, the sandbox image's tag. */
export function netToolsImageTag(baseTag: string): string {
  const hash = createHash("sha256").update(readFileSync(DOCKERFILE)).update("\0").update(baseTag);
  return `${NET_TOOLS_REPOSITORY}:${hash.digest("hex").slice(0, 12)}`;
}

async function imageExists(docker: Docker, tag: string): Promise<boolean> {
  try {
    await docker.getImage(tag).inspect();
    return true;
  } catch {
    return false;
  }
}

/**
 * Returns the net-tools tag for `baseTag`, building it first when missing. The build uses the host's
 * network (like the sandbox image's) so apt reaches Debian's packages; nothing else runs with it.
 */
export async function ensureNetToolsImage(
  docker: Docker,
  baseTag: string,
  onProgress: (line: string) => void = () => {},
): Promise<string> {
  const tag = netToolsImageTag(baseTag);
  if (await imageExists(docker, tag)) return tag;
  onProgress(`building ${tag} on ${baseTag}`);
  const context = pack();
  context.entry({ name: "Dockerfile", mode: 0o644 }, readFileSync(DOCKERFILE));
  context.finalize();
  const output = await docker.buildImage(Readable.from(context), {
    t: tag,
    buildargs: { BASE_IMAGE: baseTag },
    networkmode: "host",
    rm: true,
    forcerm: true,
  });
  const tail: string[] = [];
  await new Promise<void>((resolve, reject) => {
    docker.modem.followProgress(
      output,
      (error: Error | null) => (error ? reject(error) : resolve()),
      (event: { stream?: string; error?: string }) => {
        const text = (event.stream ?? event.error ?? "").trimEnd();
        if (!text) return;
        tail.push(text);
        if (tail.length > 30) tail.shift();
        onProgress(text);
      },
    );
  });
  // A failed RUN step can arrive as an error event rather than a failed stream: check the result.
  if (!(await imageExists(docker, tag))) throw new Error(`building ${tag} failed:\n${tail.join("\n")}`);
  return tag;
}
