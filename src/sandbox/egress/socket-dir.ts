/**
 * The gateway's private directory and its socket's name. The directory is bind-mounted into the
 * sandbox, so it must be ours and nobody else's: a directory someone else can write, or a symlink
 * to one, could hand the sandbox a socket that is not harness's. Sockets of harness processes that
 * died are removed, never connected to.
 */

import { randomBytes } from "node:crypto";
import { lchown, lstat, mkdir, readdir, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { SandboxError } from "../../errors.js";
import { openHostDir } from "../../host-files/host-path.js";
import { isProcessAlive } from "../../state/liveness.js";

/**
 * `${pid}-${random}.sock`: several harness processes can share the directory. Beside a socket, the
 * run CA's certificate files (`.ca.pem`, `.bundle.pem`) when the gateway ends TLS.
 */
const SOCKET_NAME = /^([0-9]+)-[0-9a-f]+\.(?:sock|ca\.pem|bundle\.pem)$/;

/** Longest socket path Linux accepts (sun_path is 108 bytes with its NUL). */
const MAX_SOCKET_PATH = 107;

/**
 * Makes `dir` (0700) if missing, checks it, gives it to `owner` and removes stale sockets in it.
 * Throws SandboxError when it is a symlink, not a directory, owned by someone else, or writable by
 * group or others.
 */
export async function prepareSocketDir(
  dir: string,
  owner: { uid: number; gid: number } | undefined,
): Promise<void> {
  const existing = await lstat(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === "ENOENT") return undefined;
    throw new SandboxError(`egress gateway: cannot inspect socket directory ${dir}: ${error.message}`, {
      cause: error,
    });
  });
  if (existing === undefined) {
    openHostDir(dirname(dir), 0o700).close();
    // Not recursive, and no chmod after: if someone else creates the path first, mkdir fails and the
    // checks below judge what is there, instead of a chmod following their symlink. The umask can only
    // take bits away from 0700.
    await mkdir(dir, { mode: 0o700 }).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== "EEXIST") throw error;
    });
  }
  const stat = await lstat(dir);
  const me = process.getuid?.() ?? stat.uid;
  const trusted = [me, 0, ...(owner === undefined ? [] : [owner.uid])];
  if (stat.isSymbolicLink() || !stat.isDirectory()) {
    throw new SandboxError(`egress gateway: socket directory ${dir} is not a real directory (a symlink?)`);
  }
  if (!trusted.includes(stat.uid)) {
    throw new SandboxError(
      `egress gateway: socket directory ${dir} is owned by uid ${stat.uid}, not by harness`,
    );
  }
  if ((stat.mode & 0o022) !== 0) {
    throw new SandboxError(
      `egress gateway: socket directory ${dir} is writable by others (mode ${(stat.mode & 0o777).toString(8)})`,
    );
  }
  if (owner !== undefined) await lchown(dir, owner.uid, owner.gid);
  await removeStaleSockets(dir);
}

/** A fresh socket name for this process, and its path; throws when the path is too long for a socket. */
export function newSocketPath(dir: string): { name: string; path: string } {
  const name = `${process.pid}-${randomBytes(6).toString("hex")}.sock`;
  const path = join(dir, name);
  if (Buffer.byteLength(path) > MAX_SOCKET_PATH) {
    throw new SandboxError(
      `egress gateway: socket path ${path} is longer than ${MAX_SOCKET_PATH} bytes; use a shorter directory`,
    );
  }
  return { name, path };
}

/** Unlinks the sockets in `dir` whose harness process is gone (unlink never follows a link). */
async function removeStaleSockets(dir: string): Promise<void> {
  for (const name of await readdir(dir)) {
    const pid = Number(SOCKET_NAME.exec(name)?.[1] ?? Number.NaN);
    if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid || isProcessAlive(pid)) continue;
    await unlink(join(dir, name)).catch(() => {});
  }
}
