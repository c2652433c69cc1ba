/**
 * A devcontainer build's context, read from the workspace once, through held descriptors: from the
 * workspace root down, every folder is opened through its parent's descriptor without following a
 * symlink (`/proc/self/fd/N/name` with O_NOFOLLOW: only `name` is resolved), listed and walked
 * through that descriptor, and every file is read through its own. The paths devcontainer.json
 * named were checked when it was loaded, but the sandbox can write the workspace (a task of a
 * concurrent sandbox, a process a run left behind): a folder swapped for a link to `/root` between
 * that check and this read is refused here, never followed, and the bytes packed (and parsed by
 * dockerfile-fetches.ts) are the bytes read. A symlink goes into the tar as a symlink, which the
 * engine's builder keeps inside the context. Synchronous: one walk costs a few syscalls per entry.
 *
 * harness often runs as root, so a file in the workspace its owner cannot read (one a root process
 * left there, or a hard link to a root-only file: a task cannot make one, as the host's files are
 * not in its mount namespace and protected_hardlinks refuses the owner a link to a file it cannot
 * read) is left out, with a line, rather than copied into an image its commands read. Fifos,
 * sockets, devices and names that are not UTF-8 are left out too.
 */
import { createHash } from "node:crypto";
import {
  closeSync,
  constants,
  fstatSync,
  openSync,
  readdirSync,
  readlinkSync,
  readSync,
  type Stats,
} from "node:fs";
import { relative, sep } from "node:path";
import { ConfigError, SandboxError } from "../../../errors.js";
import { heldDescriptorsWork, O_PATH } from "../../../host-files/host-path.js";
import { specialKind } from "../../copy/workspace-scan.js";
import { hasRawBytes, nameFromBytes } from "../../host/paths/byte-names.js";
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

/** A folder on the way to the context: search permission is enough (O_PATH), never through a link. */
const PATH_FLAGS = O_PATH | constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
/** An entry: never follows a last symlink (ELOOP), never waits on a fifo, never takes a terminal. */
const ENTRY_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

/** The path that reaches `name` in the folder held as `fd`: the kernel resolves only `name`. */
const at = (fd: number, name: string) => `/proc/self/fd/${fd}/${name}`;

/** The owner's read permission (and search, for a folder) by the mode bits that apply to them. */
function ownerCanRead(info: Stats, owner: { uid: number; gid: number }): boolean {
  const need = info.isDirectory() ? 0o5 : 0o4;
  const shift = info.uid === owner.uid ? 6 : info.gid === owner.gid ? 3 : 0;
  return ((info.mode >> shift) & need) === need;
}

/** What is at a name: opened (a file or a folder, to read through the descriptor), or why not. */
type Opened =
  | { kind: "open"; fd: number; info: Stats }
  | { kind: "symlink" }
  | { kind: "left out"; reason: string };

function openEntry(path: string): Opened {
  let fd: number;
  try {
    fd = openSync(path, ENTRY_FLAGS);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ELOOP") return { kind: "symlink" };
    if (code === "ENXIO") return { kind: "left out", reason: "socket" };
    if (code === "ENOENT") return { kind: "left out", reason: "removed while read" };
    if (code === "EACCES" || code === "EPERM") return { kind: "left out", reason: "unreadable" };
    throw error;
  }
  try {
    return { kind: "open", fd, info: fstatSync(fd) };
  } catch (error) {
    closeSync(fd);
    throw error;
  }
}

/** Up to `size` bytes, through the descriptor (the file may have shrunk since; it never grows past it). */
function readFd(fd: number, size: number): Buffer {
  const buffer = Buffer.alloc(size);
  let got = 0;
  while (got < size) {
    const read = readSync(fd, buffer, got, size - got, got);
    if (read === 0) break;
    got += read;
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

/**
 * The folder at root-relative `parts`, each component opened through its parent without following
 * a link. Throws ConfigError naming the component that is a symlink now (or is gone, or is no
 * folder): devcontainer.json's check saw a folder there.
 */
function openFolder(root: string, parts: readonly string[], what: string, path: string): number {
  let fd = openSync(root, PATH_FLAGS);
  for (const [index, part] of parts.entries()) {
    let next: number;
    try {
      next = openSync(at(fd, part), PATH_FLAGS);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== "ELOOP" && code !== "ENOTDIR" && code !== "ENOENT") throw error;
      let now: string;
      try {
        readlinkSync(at(fd, part));
        now = "a symlink";
      } catch {
        now = code === "ENOENT" ? "missing" : "not a folder";
      }
      closeSync(fd);
      throw new ConfigError(
        `${what} ${path}: ${parts.slice(0, index + 1).join("/")} is ${now} now, inside the workspace (it was a folder when devcontainer.json was read): not followed; the build is refused`,
      );
    }
    closeSync(fd);
    fd = next;
  }
  return fd;
}

/** What one walk gathers. */
interface Walk {
  entries: ContextEntry[];
  leftOut: BuildContext["leftOut"];
  bytes: number;
  owner: { uid: number; gid: number };
  ownerText: string;
  limits: typeof CONTEXT_LIMITS;
  context: string;
}

/** The entries of the folder held as `dirFd` (context-relative `rel`), and below it. */
function walkFolder(walk: Walk, dirFd: number, rel: string): void {
  const names = readdirSync(`/proc/self/fd/${dirFd}`, { encoding: "buffer" })
    .map((name) => nameFromBytes(name))
    .sort();
  for (const name of names) {
    const path = rel === "" ? name : `${rel}/${name}`;
    if (hasRawBytes(name)) {
      walk.leftOut.push({ path, reason: "name is not UTF-8" });
      continue;
    }
    if (walk.entries.length >= walk.limits.entries) {
      throw new SandboxError(
        `devcontainer build context ${walk.context} has more than ${walk.limits.entries} entries`,
      );
    }
    const opened = openEntry(at(dirFd, name));
    if (opened.kind === "left out") {
      walk.leftOut.push({ path, reason: opened.reason });
      continue;
    }
    if (opened.kind === "symlink") {
      let target: string | undefined;
      try {
        target = nameFromBytes(readlinkSync(at(dirFd, name), { encoding: "buffer" }));
      } catch {
        target = undefined;
      }
      if (target === undefined || hasRawBytes(target)) {
        walk.leftOut.push({
          path,
          reason: target === undefined ? "changed while read" : "target is not UTF-8",
        });
      } else walk.entries.push({ type: "symlink", name: path, linkname: target });
      continue;
    }
    const { fd, info } = opened;
    try {
      if (!info.isFile() && !info.isDirectory()) walk.leftOut.push({ path, reason: specialKind(info) });
      else if (!ownerCanRead(info, walk.owner)) {
        walk.leftOut.push({ path, reason: `the workspace owner (${walk.ownerText}) cannot read it` });
      } else if (info.isDirectory()) {
        walk.entries.push({ type: "directory", name: path, mode: info.mode & 0o755 });
        // Listed and walked through the descriptor just checked, whatever is at its name now.
        walkFolder(walk, fd, path);
      } else {
        walk.bytes += info.size;
        if (walk.bytes > walk.limits.bytes) {
          throw new SandboxError(
            `devcontainer build context ${walk.context} is larger than ${walk.limits.bytes} bytes`,
          );
        }
        walk.entries.push({
          type: "file",
          name: path,
          mode: info.mode & 0o755,
          content: readFd(fd, info.size),
        });
      }
    } finally {
      closeSync(fd);
    }
  }
}

/** The context (and an outside Dockerfile), read once. `owner` is the workspace's "uid:gid". */
export function readBuildContext(
  build: DevcontainerBuild,
  owner: string,
  limits = CONTEXT_LIMITS,
): BuildContext {
  if (!heldDescriptorsWork()) {
    throw new ConfigError(
      "devcontainer build: reading the build context without following links needs /proc/self/fd, which this host lacks; build the image yourself and name it in 'image'",
    );
  }
  const walk: Walk = {
    entries: [],
    leftOut: [],
    bytes: 0,
    owner: parseUserIds(owner),
    ownerText: owner,
    limits,
    context: build.context,
  };
  const contextFd = openFolder(
    build.workspace,
    partsOf(build.workspace, build.context),
    "build.context",
    build.context,
  );
  try {
    walkFolder(walk, contextFd, "");
  } finally {
    closeSync(contextFd);
  }
  const inside = relative(build.context, build.dockerfile).split(sep).join("/");
  let dockerfile = inside;
  let dockerfileContent: Buffer;
  if (inside === ".." || inside.startsWith("../")) {
    dockerfile = OUTSIDE_DOCKERFILE;
    dockerfileContent = readOutsideDockerfile(build, walk);
    walk.entries.push({ type: "file", name: dockerfile, mode: 0o644, content: dockerfileContent });
  } else {
    const entry = walk.entries.find((e) => e.name === inside);
    if (entry?.type !== "file") {
      const why = walk.leftOut.find((e) => e.path === inside)?.reason ?? entry?.type ?? "missing";
      throw new ConfigError(
        `build.dockerfile ${build.dockerfile} is not a regular file the build can read (${why})`,
      );
    }
    dockerfileContent = entry.content;
  }
  const hash = createHash("sha256");
  for (const entry of walk.entries) {
    hash.update(`${entry.type}\0${entry.name}\0`);
    if (entry.type === "file") hash.update(`${entry.mode}\0`).update(entry.content);
    else if (entry.type === "symlink") hash.update(entry.linkname);
    hash.update("\0");
  }
  hash.update(JSON.stringify({ dockerfile, args: build.args, target: build.target ?? null }));
  return {
    entries: walk.entries,
    dockerfile,
    dockerfileContent,
    leftOut: walk.leftOut,
    hash: hash.digest("hex").slice(0, 16),
  };
}

/** A Dockerfile outside the context folder, read the same way. */
function readOutsideDockerfile(build: DevcontainerBuild, walk: Walk): Buffer {
  const parts = partsOf(build.workspace, build.dockerfile);
  const name = parts.pop() as string;
  const dirFd = openFolder(build.workspace, parts, "build.dockerfile", build.dockerfile);
  const refuse = (why: string) =>
    new ConfigError(`build.dockerfile ${build.dockerfile} is not a regular file the build can read (${why})`);
  let opened: Opened;
  try {
    opened = openEntry(at(dirFd, name));
  } finally {
    closeSync(dirFd);
  }
  if (opened.kind === "symlink") throw refuse("it is a symlink now");
  if (opened.kind === "left out") throw refuse(opened.reason);
  const { fd, info } = opened;
  try {
    if (!info.isFile()) throw refuse(info.isDirectory() ? "a folder" : specialKind(info));
    if (!ownerCanRead(info, walk.owner))
      throw refuse(`the workspace owner (${walk.ownerText}) cannot read it`);
    if (info.size > walk.limits.bytes) throw refuse("too large");
    return readFd(fd, info.size);
  } finally {
    closeSync(fd);
  }
}
