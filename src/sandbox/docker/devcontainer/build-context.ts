/**
 * A devcontainer build's context, read from the workspace once, through held descriptors: every
 * directory is opened through its parent without following a symlink (beneath.ts), from the
 * workspace root down, and every file is opened without following one and read through that
 * descriptor. The paths devcontainer.json named were checked when it was loaded, but the sandbox
 * can write the workspace (a task of a concurrent sandbox, a process a run left behind): a folder
 * swapped for a link to `/root` between that check and this read is refused here, never followed,
 * and the bytes packed (and parsed by dockerfile-fetches.ts) are the bytes read. A symlink goes
 * into the tar as a symlink, which the engine's builder keeps inside the context.
 *
 * harness often runs as root, so a file in the workspace its owner cannot read (one a root process
 * left there, or a hard link to a root-only file: a task cannot make one, as the host's files are
 * not in its mount namespace and protected_hardlinks refuses the owner a link to a file it cannot
 * read) is left out, with a line, rather than copied into an image its commands read. Fifos,
 * sockets, devices and names that are not UTF-8 are left out too.
 */
import { createHash } from "node:crypto";
import { constants, type Stats } from "node:fs";
import { type FileHandle, open, readlink, stat } from "node:fs/promises";
import { relative, sep } from "node:path";
import { ConfigError, SandboxError } from "../../../errors.js";
import { specialKind } from "../../copy/workspace-scan.js";
import { BeneathError, type BeneathRoot, withBeneath } from "../../host/paths/beneath.js";
import { hasRawBytes, nameFromBytes, readdirLossless } from "../../host/paths/byte-names.js";
import type { DevcontainerBuild } from "../../sandbox-request.js";
import { parseUserIds } from "../../sandbox-user.js";

/** One tar entry. */
export type ContextEntry =
  | { type: "file"; name: string; mode: number; content: Buffer }
  | { type: "directory"; name: string; mode: number }
  | { type: "symlink"; name: string; linkname: string };

export interface BuildContext {
  entries: ContextEntry[];
  /** The Dockerfile's name inside the context. */
  dockerfile: string;
  /** The Dockerfile's bytes: those packed, which the engine reads. */
  dockerfileContent: Buffer;
  /** Context paths not packed, and why (said in one line before the build). */
  leftOut: { path: string; reason: string }[];
  /** Over every entry, the Dockerfile's name, the args and the target: the image's tag. */
  hash: string;
}

/** Bounds on what is read from the workspace for one build. */
export const CONTEXT_LIMITS = { bytes: 512 * 1024 ** 2, entries: 50_000 };

/** Where a Dockerfile from outside the context folder goes in the tar. */
const OUTSIDE_DOCKERFILE = ".harness-devcontainer.Dockerfile";

/** Never follows a last symlink (ELOOP), never waits on a fifo, never takes a terminal. */
const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

/** The owner's read permission (and search, for a directory) by the mode bits that apply to them. */
function ownerCanRead(info: Stats, owner: { uid: number; gid: number }): boolean {
  const need = info.isDirectory() ? 0o5 : 0o4;
  const shift = info.uid === owner.uid ? 6 : info.gid === owner.gid ? 3 : 0;
  return ((info.mode >> shift) & need) === need;
}

/** What is at a name: opened (a file or a directory), or why not. */
type Opened =
  | { kind: "open"; handle: FileHandle; info: Stats }
  | { kind: "symlink" }
  | { kind: "left out"; reason: string };

async function openEntry(path: string | Buffer): Promise<Opened> {
  let handle: FileHandle;
  try {
    handle = await open(path, FILE_FLAGS);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ELOOP") return { kind: "symlink" };
    if (code === "ENXIO") return { kind: "left out", reason: "socket" };
    if (code === "ENOENT") return { kind: "left out", reason: "removed while read" };
    if (code === "EACCES" || code === "EPERM") return { kind: "left out", reason: "unreadable" };
    throw error;
  }
  return { kind: "open", handle, info: await handle.stat() };
}

/** Up to `size` bytes, through the descriptor (the file may have shrunk since; it never grows past it). */
async function readHandle(handle: FileHandle, size: number): Promise<Buffer> {
  const buffer = Buffer.alloc(size);
  let got = 0;
  while (got < size) {
    const { bytesRead } = await handle.read(buffer, got, size - got, got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return buffer.subarray(0, got);
}

/** Root-relative components of `path`, which loadDevcontainer checked lies inside `root`. */
function partsOf(root: string, path: string): string[] {
  const rel = relative(root, path);
  if (rel === "") return [];
  const parts = rel.split(sep);
  if (parts.includes("..")) throw new SandboxError(`${path} is outside the workspace ${root}`);
  return parts;
}

/** A BeneathError on the way to something devcontainer.json named: one line, naming it. */
function changed(what: string, path: string, error: BeneathError): ConfigError {
  return new ConfigError(
    `${what} ${path}: ${error.message} now, inside the workspace (it was not when devcontainer.json was read): not followed; the build is refused`,
  );
}

/** The context (and an outside Dockerfile), read once. `owner` is the workspace's "uid:gid". */
export async function readBuildContext(
  build: DevcontainerBuild,
  owner: string,
  limits = CONTEXT_LIMITS,
): Promise<BuildContext> {
  const ids = parseUserIds(owner);
  const entries: ContextEntry[] = [];
  const leftOut: BuildContext["leftOut"] = [];
  let bytes = 0;
  const count = () => {
    if (entries.length >= limits.entries) {
      throw new SandboxError(
        `devcontainer build context ${build.context} has more than ${limits.entries} entries`,
      );
    }
  };
  const walk = async (beneath: BeneathRoot, parts: string[], rel: string, seen?: Stats): Promise<void> => {
    let dir: Awaited<ReturnType<BeneathRoot["dir"]>>;
    try {
      dir = await beneath.dir(parts);
    } catch (error) {
      if (error instanceof BeneathError) throw changed("build.context", build.context, error);
      throw error;
    }
    // The directory checked (readable by the owner) is the one listed, not another moved in since.
    const now = seen === undefined ? undefined : await stat(dir.path);
    if (seen !== undefined && (now?.ino !== seen.ino || now?.dev !== seen.dev)) {
      throw new ConfigError(
        `build.context ${build.context}: ${rel} was replaced while harness read it; the build is refused`,
      );
    }
    const names = (await readdirLossless(dir.path)).map((entry) => entry.name).sort();
    for (const name of names) {
      const path = rel === "" ? name : `${rel}/${name}`;
      if (hasRawBytes(name)) {
        leftOut.push({ path, reason: "name is not UTF-8" });
        continue;
      }
      const opened = await openEntry(dir.at(name));
      if (opened.kind === "left out") {
        leftOut.push({ path, reason: opened.reason });
        continue;
      }
      if (opened.kind === "symlink") {
        const target = await readlink(dir.at(name), { encoding: "buffer" }).catch(() => undefined);
        const linkname = target === undefined ? undefined : nameFromBytes(target);
        if (linkname === undefined || hasRawBytes(linkname)) {
          leftOut.push({
            path,
            reason: linkname === undefined ? "changed while read" : "target is not UTF-8",
          });
          continue;
        }
        count();
        entries.push({ type: "symlink", name: path, linkname });
        continue;
      }
      const { handle, info } = opened;
      try {
        if (!info.isFile() && !info.isDirectory()) {
          leftOut.push({ path, reason: specialKind(info) });
          continue;
        }
        if (!ownerCanRead(info, ids)) {
          leftOut.push({ path, reason: `the workspace owner (${owner}) cannot read it` });
          continue;
        }
        count();
        if (info.isDirectory()) {
          entries.push({ type: "directory", name: path, mode: info.mode & 0o755 });
        } else {
          bytes += info.size;
          if (bytes > limits.bytes) {
            throw new SandboxError(
              `devcontainer build context ${build.context} is larger than ${limits.bytes} bytes`,
            );
          }
          const content = await readHandle(handle, info.size);
          entries.push({ type: "file", name: path, mode: info.mode & 0o755, content });
        }
      } finally {
        await handle.close();
      }
      // The directory is opened again through `dir`, never following a link swapped in meanwhile.
      if (info.isDirectory()) await walk(beneath, [...parts, name], path, info);
    }
  };
  const contextParts = partsOf(build.workspace, build.context);
  const inside = relative(build.context, build.dockerfile).split(sep).join("/");
  const outside = inside === ".." || inside.startsWith("../");
  let dockerfile = inside;
  let dockerfileContent: Buffer | undefined;
  await withBeneath(build.workspace, async (beneath) => {
    await walk(beneath, contextParts, "");
    if (outside) {
      dockerfile = OUTSIDE_DOCKERFILE;
      dockerfileContent = await readOutsideDockerfile(beneath, build, ids, owner);
      entries.push({ type: "file", name: dockerfile, mode: 0o644, content: dockerfileContent });
    }
  });
  if (!outside) {
    const entry = entries.find((e) => e.name === inside);
    if (entry?.type !== "file") {
      const why = leftOut.find((e) => e.path === inside)?.reason ?? entry?.type ?? "missing";
      throw new ConfigError(
        `build.dockerfile ${build.dockerfile} is not a regular file the build can read (${why})`,
      );
    }
    dockerfileContent = entry.content;
  }
  const hash = createHash("sha256");
  for (const entry of entries) {
    hash.update(`${entry.type}\0${entry.name}\0`);
    if (entry.type === "file") hash.update(`${entry.mode}\0`).update(entry.content);
    else if (entry.type === "symlink") hash.update(entry.linkname);
    hash.update("\0");
  }
  hash.update(JSON.stringify({ dockerfile, args: build.args, target: build.target ?? null }));
  return {
    entries,
    dockerfile,
    dockerfileContent: dockerfileContent as Buffer,
    leftOut,
    hash: hash.digest("hex").slice(0, 16),
  };
}

/** A Dockerfile outside the context folder, read the same way. */
async function readOutsideDockerfile(
  beneath: BeneathRoot,
  build: DevcontainerBuild,
  ids: { uid: number; gid: number },
  owner: string,
): Promise<Buffer> {
  const parts = partsOf(build.workspace, build.dockerfile);
  const name = parts.pop() as string;
  let dir: Awaited<ReturnType<BeneathRoot["dir"]>>;
  try {
    dir = await beneath.dir(parts);
  } catch (error) {
    if (error instanceof BeneathError) throw changed("build.dockerfile", build.dockerfile, error);
    throw error;
  }
  const opened = await openEntry(dir.at(name));
  const refuse = (why: string) =>
    new ConfigError(`build.dockerfile ${build.dockerfile} is not a regular file the build can read (${why})`);
  if (opened.kind === "symlink") throw refuse("it is a symlink now");
  if (opened.kind === "left out") throw refuse(opened.reason);
  const { handle, info } = opened;
  try {
    if (!info.isFile()) throw refuse(info.isDirectory() ? "a directory" : specialKind(info));
    if (!ownerCanRead(info, ids)) throw refuse(`the workspace owner (${owner}) cannot read it`);
    if (info.size > CONTEXT_LIMITS.bytes) throw refuse("too large");
    return await readHandle(handle, info.size);
  } finally {
    await handle.close();
  }
}
