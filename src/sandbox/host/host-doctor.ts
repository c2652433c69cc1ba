/** `harness doctor`'s checks of the host side: the workspace and free disk, as data. */
import { statfs } from "node:fs/promises";
import { HarnessError } from "../../errors.js";
import { type DoctorCheck, diskCheck } from "../doctor-check.js";
import { resolveSandboxUser } from "../sandbox-user.js";
import { resolveWorkspace } from "./workspace.js";

/** The workspace exists, is a readable directory, and gives a sandbox user that is not root. */
export async function workspaceCheck(given: string, user: string | undefined): Promise<DoctorCheck> {
  try {
    const { path, owner } = await resolveWorkspace(given);
    const runAs = resolveSandboxUser(path, owner, user);
    return { name: "workspace", status: "ok", detail: `${path}, owner ${owner}, commands run as ${runAs}` };
  } catch (error) {
    if (!(error instanceof HarnessError)) throw error;
    return {
      name: "workspace",
      status: "fail",
      detail: error.message,
      fix: "pass -w DIR, or --user UID:GID",
    };
  }
}

/**
 * Free space of `path` on this machine (the nearest existing parent when it does not exist yet);
 * undefined when not even a parent can be measured.
 */
export async function freeDiskCheck(name: string, path: string): Promise<DoctorCheck | undefined> {
  for (let dir = path; ; dir = dir.replace(/\/[^/]*\/?$/, "") || "/") {
    try {
      const stats = await statfs(dir);
      return diskCheck(name, path, stats.bavail * stats.bsize);
    } catch {
      if (dir === "/") return undefined;
    }
  }
}
