/**
 * A devcontainer build's context, read from the workspace: every file, folder and symlink under the
 * context folder, never following a symlink (a symlink goes into the tar as a symlink, and the
 * engine's builder keeps it inside the context), within size bounds. The Dockerfile, when it lies
 * outside the context folder, goes in under a name of its own.
 */
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, readFileSync, readlinkSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { SandboxError } from "../../../errors.js";
import type { DevcontainerBuild } from "../../sandbox-request.js";

/** One tar entry. */
export type ContextEntry =
  | { type: "file"; name: string; mode: number; content: Buffer }
  | { type: "directory"; name: string; mode: number }
  | { type: "symlink"; name: string; linkname: string };

export interface BuildContext {
  entries: ContextEntry[];
  /** The Dockerfile's name inside the context. */
  dockerfile: string;
  /** Over every entry, the Dockerfile's name, the args and the target: the image's tag. */
  hash: string;
}

/** Bounds on what is read from the workspace for one build. */
export const CONTEXT_LIMITS = { bytes: 512 * 1024 ** 2, entries: 50_000 };

/** Where a Dockerfile from outside the context folder goes in the tar. */
const OUTSIDE_DOCKERFILE = ".harness-devcontainer.Dockerfile";

export function readBuildContext(build: DevcontainerBuild, limits = CONTEXT_LIMITS): BuildContext {
  const entries: ContextEntry[] = [];
  let bytes = 0;
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const full = join(dir, name);
      const rel = relative(build.context, full).split(sep).join("/");
      const stat = lstatSync(full);
      if (entries.length >= limits.entries) {
        throw new SandboxError(
          `devcontainer build context ${build.context} has more than ${limits.entries} entries`,
        );
      }
      if (stat.isSymbolicLink()) entries.push({ type: "symlink", name: rel, linkname: readlinkSync(full) });
      else if (stat.isDirectory()) {
        entries.push({ type: "directory", name: rel, mode: stat.mode & 0o755 });
        walk(full);
      } else if (stat.isFile()) {
        bytes += stat.size;
        if (bytes > limits.bytes) {
          throw new SandboxError(
            `devcontainer build context ${build.context} is larger than ${limits.bytes} bytes`,
          );
        }
        entries.push({ type: "file", name: rel, mode: stat.mode & 0o755, content: readFileSync(full) });
      }
      // Sockets, fifos and devices stay out.
    }
  };
  walk(build.context);
  const inside = relative(build.context, build.dockerfile).split(sep).join("/");
  let dockerfile = inside;
  if (inside.startsWith("../") || inside === "..") {
    dockerfile = OUTSIDE_DOCKERFILE;
    entries.push({ type: "file", name: dockerfile, mode: 0o644, content: readFileSync(build.dockerfile) });
  }
  const hash = createHash("sha256");
  for (const entry of entries) {
    hash.update(`${entry.type}\0${entry.name}\0`);
    if (entry.type === "file") hash.update(`${entry.mode}\0`).update(entry.content);
    else if (entry.type === "symlink") hash.update(entry.linkname);
    hash.update("\0");
  }
  hash.update(JSON.stringify({ dockerfile, args: build.args, target: build.target ?? null }));
  return { entries, dockerfile, hash: hash.digest("hex").slice(0, 16) };
}
