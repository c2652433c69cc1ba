/**
 * Which containers' postCreateCommand failed, so that the next open that reuses such a container
 * runs it again, as the devcontainer CLI does (it writes its marker only once the command
 * succeeded). One empty file per container id in harness's state directory, which no sandbox can
 * write; removed once the command succeeds. A file whose container is gone only costs an inode:
 * those older than a month go whenever another is written.
 */
import { mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import createDebug from "debug";
import { harnessStateDir } from "../../../state/state-dir.js";

const log = createDebug("harness:docker");

const STALE_MS = 30 * 24 * 3600 * 1000;

function pendingDir(env: NodeJS.ProcessEnv): string {
  return join(harnessStateDir(env), "devcontainer", "post-create-failed");
}

/** A container id is hex; anything else names no file of ours. */
function fileOf(containerId: string, env: NodeJS.ProcessEnv): string | undefined {
  return /^[0-9a-f]{12,64}$/.test(containerId) ? join(pendingDir(env), containerId) : undefined;
}

/** True when this container's postCreateCommand failed last time it ran. */
export function postCreatePending(containerId: string, env: NodeJS.ProcessEnv = process.env): boolean {
  const file = fileOf(containerId, env);
  if (file === undefined) return false;
  try {
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Records how the container's postCreateCommand ended. Never throws: at worst it is not tried again. */
export function recordPostCreate(
  containerId: string,
  succeeded: boolean,
  env: NodeJS.ProcessEnv = process.env,
): void {
  const file = fileOf(containerId, env);
  if (file === undefined) return;
  try {
    if (succeeded) {
      rmSync(file, { force: true });
      return;
    }
    mkdirSync(pendingDir(env), { recursive: true, mode: 0o700 });
    writeFileSync(file, "");
    dropStale(env);
  } catch (error) {
    log("recording the postCreateCommand of %s failed: %s", containerId.slice(0, 12), error);
  }
}

function dropStale(env: NodeJS.ProcessEnv): void {
  const dir = pendingDir(env);
  const now = Date.now();
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (now - statSync(path).mtimeMs > STALE_MS) rmSync(path, { force: true });
  }
}
