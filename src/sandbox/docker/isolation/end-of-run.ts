/** What happens to a bind-mode sandbox's processes when a run ends. */
import createDebug from "debug";
import type Docker from "dockerode";
import { INIT_CHILD } from "../../exec/exec-scripts.js";
import { parseUserIds } from "../../sandbox-user.js";
import { dockerStatus } from "../exec/docker-errors.js";
import { runSimpleExec } from "../exec/exec-helper.js";

const log = createDebug("harness:docker");

/** `docker top`'s columns here: real uid (what a process is, whatever it calls itself) and command line. */
const PS_ARGS = "-o pid,ppid,ruid,args";

/** A process the end of a run could not end, as `docker top` shows it. */
export interface Survivor {
  pid: string;
  ruid: string;
  command: string;
}

/**
 * Ends every process of the sandbox user (PID 1's machinery is of another uid where it runs as root,
 * and PID 1 ignores the signal in any case, see INIT_SCRIPT), so nothing a task started in the
 * background keeps writing the workspace after the run: the checks that follow see the workspace as
 * the run left it, and it stays that way. Repeated because a process forking in a loop can have a
 * child the first sweep missed. When no exec can run (pid limit exhausted, wedged), the whole
 * container is stopped instead; the next run starts it again. Resolves with what is still there
 * afterwards (empty when nothing is, or when the container was stopped).
 */
export async function endLeftoverProcesses(container: Docker.Container, user: string): Promise<Survivor[]> {
  if ((await leftovers(container, user))?.length === 0) return [];
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
    return [];
  }
  return (await leftovers(container, user)) ?? [];
}

/** One line for the end of a run; the command lines are the sandbox's words, cut short. */
export function describeSurvivors(survivors: readonly Survivor[]): string {
  const listed = survivors
    .slice(0, 5)
    .map((s) => `pid ${s.pid} (uid ${s.ruid}): ${s.command.slice(0, 80)}`)
    .join("; ");
  const more = survivors.length > 5 ? ` and ${survivors.length - 5} more` : "";
  return `warning: ${survivors.length} process(es) of the run survived the end-of-run kill and may still write the workspace: ${listed}${more}; 'harness rm' removes the container`;
}

/**
 * The processes of the run still in the container, as the engine's `ps` sees them (outside the
 * sandbox's reach); undefined when it could not say (an engine without `top`, an error).
 *
 * Identified by what they are, never by their names: where the machinery runs as root (PID 1's real
 * uid is not the sandbox user's), every process of another real uid than PID 1's is the run's, since
 * no command can make a process of PID 1's uid; a process that calls itself `sleep 2147483647` is
 * still one of them. Where the machinery shares the sandbox user's uid (Podman), only PID 1 and its
 * one `sleep` child may be left (PID 1 starts a new sleep as soon as its own ends, so a look-alike
 * always makes a third row).
 */
async function leftovers(container: Docker.Container, user: string): Promise<Survivor[] | undefined> {
  try {
    const [info, top] = await Promise.all([
      container.inspect(),
      container.top({ ps_args: PS_ARGS }) as Promise<{ Titles?: string[]; Processes?: string[][] }>,
    ]);
    const init = String(info.State.Pid);
    const titles = top.Titles ?? [];
    const [pidAt, ppidAt, ruidAt, argsAt] = ["PID", "PPID", "RUID", "COMMAND"].map((t) => titles.indexOf(t));
    if ([pidAt, ppidAt, ruidAt, argsAt].some((i) => i === undefined || i < 0)) return undefined;
    const rows = (top.Processes ?? []).map((row) => ({
      pid: row[pidAt as number] ?? "",
      ppid: row[ppidAt as number] ?? "",
      ruid: row[ruidAt as number] ?? "",
      command: row[argsAt as number] ?? "",
    }));
    const initRuid = rows.find((row) => row.pid === init)?.ruid;
    if (initRuid === undefined) return undefined;
    const others = rows.filter((row) => row.pid !== init);
    if (initRuid !== String(parseUserIds(user).uid)) {
      return others
        .filter((row) => row.ruid !== initRuid)
        .map(({ pid, ruid, command }) => ({ pid, ruid, command }));
    }
    const onlySleep = others.length === 1 && others[0]?.ppid === init && others[0].command === INIT_CHILD;
    return onlySleep ? [] : others.map(({ pid, ruid, command }) => ({ pid, ruid, command }));
  } catch (error) {
    log("listing the container's processes failed: %s", (error as Error).message);
    return undefined;
  }
}
