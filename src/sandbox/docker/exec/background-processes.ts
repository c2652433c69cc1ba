/**
 * What still runs in the background of a sandbox when a command ends, for the model: a server a
 * call started with `nohup … &` keeps running, and without this the model never hears of it again.
 *
 * The wrapper counts the processes PID 1 adopted, with shell builtins (WRAPPER_SCRIPT), and puts
 * the count in its end marker; only a nonzero count makes the host look, so a call with nothing in
 * the background pays nothing more (~50 µs in the container). The look is `docker top`, which the engine's host runs outside the sandbox's reach:
 * the command can fake the count (it can print a marker of its own) but not the list.
 */
import createDebug from "debug";
import type Docker from "dockerode";
import { INIT_CHILD } from "../../exec/exec-scripts.js";
import type { BackgroundProcess } from "../../sandbox.js";

const log = createDebug("harness:exec");

/** `docker top` and the inspect beside it took 30–100 ms here; a wedged engine must not hold the call. */
const LOOK_DEADLINE_MS = 5_000;
/** Longest command line kept; the model needs to recognize it, not to read a script. */
const MAX_COMMAND_CHARS = 200;
/** Elapsed seconds (`etimes`) and state beside the parent, so nothing is parsed from dates. */
const PS_ARGS = "-o pid,ppid,ruid,stat,etimes,args";

/** `docker top`'s answer: column titles and one row of strings per process. */
export interface TopResult {
  Titles?: string[];
  Processes?: string[][];
}

/**
 * The sandbox's background jobs, oldest first; empty when there are none or the engine could not
 * say (an error or the deadline: logged, never thrown, the command's result matters more).
 */
export async function listBackgroundProcesses(
  container: Docker.Container,
  deadlineMs = LOOK_DEADLINE_MS,
): Promise<BackgroundProcess[]> {
  const look = Promise.all([container.inspect(), container.top({ ps_args: PS_ARGS }) as Promise<TopResult>]);
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), deadlineMs);
  });
  try {
    const answer = await Promise.race([look, late]);
    if (answer === undefined) {
      log("docker top gave no answer within %d ms", deadlineMs);
      look.catch(() => {});
      return [];
    }
    const [info, top] = answer;
    return backgroundJobs(String(info.State.Pid), top);
  } catch (error) {
    log("listing background processes failed: %s", (error as Error).message);
    return [];
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The processes PID 1 adopted (`initPid` is its pid as `docker top` shows it), but for its own
 * `sleep` and zombies: each is a job something left running after the process that started it
 * ended, with or without `setsid`; the same rule as the wrapper's count. Their children are part of
 * the job and not listed apart. Never listed: the first process of every exec, whose parent is
 * outside the container (command wrappers, harness's kill and health helpers, the allowlist relay,
 * Docker's health check), and whatever runs under a command that is still going (another harness
 * process's, or one that printed a fake end marker and carried on).
 */
export function backgroundJobs(initPid: string, top: TopResult): BackgroundProcess[] {
  const titles = top.Titles ?? [];
  const at = (title: string) => titles.indexOf(title);
  const col = {
    pid: at("PID"),
    ppid: at("PPID"),
    stat: at("STAT"),
    elapsed: at("ELAPSED"),
    args: at("COMMAND"),
  };
  if (Object.values(col).some((index) => index < 0)) return [];
  const ruidAt = at("RUID");
  const rows = top.Processes ?? [];
  const initRuid = rows.find((row) => row[col.pid] === initPid)?.[ruidAt];
  const jobs: BackgroundProcess[] = [];
  for (const row of rows) {
    if (row[col.ppid] !== initPid || row[col.pid] === initPid) continue;
    if (row[col.stat]?.startsWith("Z")) continue;
    const command = row[col.args] ?? "";
    // PID 1's own child: its name and PID 1's real uid. Where the machinery runs as root, no command
    // can make a process of that uid, so a job that names itself the same is still listed.
    if (command === INIT_CHILD && row[ruidAt] === initRuid) continue;
    jobs.push({ command: shorten(command), ageSeconds: Math.max(0, Number(row[col.elapsed]) || 0) });
  }
  return jobs.sort((a, b) => b.ageSeconds - a.ageSeconds);
}

function shorten(command: string): string {
  const flat = command.replace(/\s+/g, " ").trim();
  return flat.length > MAX_COMMAND_CHARS ? `${flat.slice(0, MAX_COMMAND_CHARS - 1)}…` : flat;
}
