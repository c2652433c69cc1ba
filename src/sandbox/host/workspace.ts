/** Checking the workspace path on the host before anything is mounted. */
import { constants } from "node:fs";
import { access, realpath, stat } from "node:fs/promises";
import { ConfigError } from "../../errors.js";
import { markSandboxWritable } from "../../host-files/host-path.js";

export interface ResolvedWorkspace {
  /** Absolute real path (symlinks resolved): the identity of the workspace's container. */
  path: string;
  /** "uid:gid" of the directory's owner: who sandbox commands run as. */
  owner: string;
}

export async function resolveWorkspace(given: string): Promise<ResolvedWorkspace> {
  let path: string;
  try {
    path = await realpath(given);
  } catch {
    throw new ConfigError(`workspace '${given}' does not exist`);
  }
  const info = await stat(path);
  if (!info.isDirectory()) throw new ConfigError(`workspace '${given}' is not a directory`);
  // From here on, harness's own files (a transcript, saved outputs) reached through it are written
  // without following any link in it: host-files/host-path.ts.
  markSandboxWritable(path);
  try {
    await access(path, constants.R_OK | constants.X_OK);
  } catch {
    throw new ConfigError(`workspace '${given}' is not readable`);
  }
  return { path, owner: `${info.uid}:${info.gid}` };
}
