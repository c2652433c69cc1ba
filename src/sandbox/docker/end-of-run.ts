/** What happens to a bind-mode sandbox's processes when a run ends. */
import createDebug from "debug";
import type Docker from "dockerode";
import { dockerStatus } from "./docker-errors.js";
import { runSimpleExec } from "./exec/exec-helper.js";
import { INIT_CHILD } from "./exec/exec-scripts.js";

const log = createDebug("harness:docker");

/**
 * Ends every process of the sandbox user but PID 1 (which ignores the signal, see INIT_SCRIPT), so
 * nothing a task started in the background keeps writing the workspace after the run: the checks
 * that follow see the workspace as the run left it, and it stays that way. Repeated because a
 * process forking in a loop can have a child the first sweep missed. When no exec can run (pid limit
 * exhausted, wedged), the whole container is stopped instead; the next run starts it again.
 */
export async function endLeftoverProcesses(container: Docker.Container, user: string): Promise<void> {
  if (await nothingLeft(container)) return;
  try {
    await runSimpleExec(
      container,
      ["/bin/sh", "-c", "for i in 1 2 3 4 5; do kill -9 -1 2>/dev/null; done; true"],
      user,
      10_000,
    );
  } catch (error) {
    log("ending leftover processes by exec failed (%s); stopping the container", (error as Error).message);
    await container.kill({ signal: "SIGKILL" }).catch((killError: unknown) => {
      // Gone, or not running: nothing is left to end.
      if (dockerStatus(killError) !== 404 && dockerStatus(killError) !== 409) throw killError;
    });
  }
}

/**
 * True when the container runs PID 1 and its one `sleep` child and nothing else: then there is
 * nothing to end, and the exec (about 100 ms) is saved for two API calls (about 40 ms). `ps` runs on
 * the engine's host, outside the sandbox's reach. A process that names itself like the sleep still
 * makes a third row (PID 1 starts a new sleep as soon as its own ends), so the count is what decides.
 * Any doubt (an engine without `top`, an error) answers false, and the exec runs.
 */
async function nothingLeft(container: Docker.Container): Promise<boolean> {
  try {
    const [info, top] = await Promise.all([
      container.inspect(),
      container.top({ ps_args: "-o pid,ppid,args" }) as Promise<{ Processes?: string[][] }>,
    ]);
    const init = String(info.State.Pid);
    const rows = top.Processes ?? [];
    const child = rows.find((row) => row[0] !== init);
    return (
      rows.length === 2 &&
      rows.some((row) => row[0] === init) &&
      child?.[1] === init &&
      child[2] === INIT_CHILD
    );
  } catch (error) {
    log("listing the container's processes failed: %s", (error as Error).message);
    return false;
  }
}
