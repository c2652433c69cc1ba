/**
 * harness's own state on the host (transcripts, the egress gateway's sockets): outside every
 * workspace, since the sandbox can write anything in a workspace, including a link where harness
 * would write.
 */

import { createHash } from "node:crypto";
import { homedir } from "node:os";
import { join } from "node:path";
import type { IsolationKind } from "../sandbox/sandbox-request.js";

/** `$XDG_STATE_HOME/harness`, or `~/.local/state/harness` when that is unset or empty. */
export function harnessStateDir(env: NodeJS.ProcessEnv = process.env): string {
  const state = env["XDG_STATE_HOME"] || join(homedir(), ".local", "state");
  return join(state, "harness");
}

/**
 * The directory that holds a workspace's egress gateway sockets. It is the same on every run for
 * the same workspace and isolation, because it is bind-mounted into the container: a path that
 * changed per run would change the container's create options (and so its config hash), and a
 * long-lived container would be recreated on every run. Several harness processes on one workspace
 * share it; their sockets carry their pid.
 */
export function egressSocketDir(
  workspace: string,
  isolation: IsolationKind,
  env: NodeJS.ProcessEnv = process.env,
): string {
  const key = createHash("sha256").update(`${workspace}\0${isolation}`).digest("hex").slice(0, 16);
  return join(harnessStateDir(env), "egress", key);
}
