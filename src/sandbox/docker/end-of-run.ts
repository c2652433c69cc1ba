/** What happens to a bind-mode sandbox's processes when a run ends. */
import createDebug from "debug";
import type Docker from "dockerode";
import { dockerStatus } from "./docker-errors.js";
import { runSimpleExec } from "./exec/exec-helper.js";

const log = createDebug("harness:docker");

/**
 * Ends every process of the sandbox user but PID 1 (which ignores the signal, see INIT_SCRIPT), so
 * nothing a task started in the background keeps writing the workspace after the run: the checks
 * that follow see the workspace as the run left it, and it stays that way. Repeated because a
 * process forking in a loop can have a child the first sweep missed. When no exec can run (pid limit
 * exhausted, wedged), the whole container is stopped instead; the next run starts it again.
 */
export async function endLeftoverProcesses(container: Docker.Container, user: string): Promise<void> {
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
