/**
 * Stopping a running command. The Engine API has no call that kills an exec, so a second exec
 * runs kill.sh: TERM, a grace, then KILL to the wrapper's process group, to every process
 * carrying the command's tag, and to every process younger than the wrapper. What it could not end
 * comes back as survivors; when the kill exec itself cannot run (no pids left, a wedged engine), the
 * container has to be restarted instead.
 */
import createDebug from "debug";
import type Docker from "dockerode";
import { killCommand } from "../../exec/exec-scripts.js";
import type { CompletionReason } from "../per-call/exec-completion.js";
import type { StartLineReader, WrapperStart } from "../per-call/start-line.js";
import { runSimpleExec } from "./exec-helper.js";

const log = createDebug("harness:exec");

/** After a kill, how long to wait for the exec to wind down before giving up on its stream. */
const AFTER_KILL_MS = 5000;
/** How long a kill waits for the wrapper's start line when it has not arrived yet. */
const START_LINE_WAIT_MS = 2000;

/** The command a kill is aimed at. */
export interface KillTarget {
  /** The command's exec, for the log. */
  execId: string;
  /** The command's tag (`EXEC_TAG_VAR`), also the wrapper's nonce. */
  nonce: string;
  /** Where the wrapper's pid and start time arrive. */
  startLine: StartLineReader;
  /** "uid:gid" the kill exec runs as: the command's. */
  user: string;
  /** Seconds between TERM and KILL. */
  killGraceSeconds: number;
}

/**
 * One kill of one command, started at most once (by the timeout, the caller's signal, or a lost
 * connection).
 */
export class ExecKill {
  /** Processes still carrying the command's tag after the kill (pids), e.g. in another session. */
  survivors: string[] = [];
  /** The kill exec itself failed: the container needs a restart. */
  failed = false;
  private running: Promise<void> | undefined;

  /** `giveUp` ends the wait for the command when nothing more can come from it. */
  constructor(
    private readonly container: Docker.Container,
    private readonly target: KillTarget,
    private readonly giveUp: (reason: Extract<CompletionReason, "kill-failed" | "abandoned">) => void,
  ) {}

  start(): void {
    this.running ??= this.run();
  }

  /** Resolves once a started kill is over; at once if none was started. */
  async done(): Promise<void> {
    await this.running;
  }

  private async run(): Promise<void> {
    const { target } = this;
    try {
      // The wrapper prints its start line before the command runs; on a very short timeout it may
      // still be on its way. Without it the killer still finds the command's tagged processes.
      const start = await firstOf(target.startLine.whenDecided(), START_LINE_WAIT_MS);
      const [pid, startTime] = startArgs(start);
      this.survivors = await runKillScript(this.container, target.user, {
        tag: target.nonce,
        graceSeconds: target.killGraceSeconds,
        pid,
        startTime,
      });
    } catch (error) {
      log("kill exec failed for %s: %s", target.execId, (error as Error).message);
      this.failed = true;
      // Nothing more will come from inside; the caller restarts the container, which ends it all.
      this.giveUp("kill-failed");
    }
    setTimeout(() => this.giveUp("abandoned"), AFTER_KILL_MS).unref();
  }
}

/**
 * Runs kill.sh from a fresh exec as `user`: TERM, the grace, then KILL to the process group of
 * `pid`, every process tagged `tag`, and (with `startTime`) every process younger than that. Resolves
 * with the pids still running after it; rejects when the exec itself cannot run.
 */
export async function runKillScript(
  container: Docker.Container,
  user: string,
  target: { tag: string; graceSeconds: number; pid: string; startTime: string },
): Promise<string[]> {
  const out = await runSimpleExec(
    container,
    killCommand(target.tag, target.graceSeconds, target.pid, target.startTime),
    user,
    // The grace, a few rounds of KILL, and room for a slow engine.
    target.graceSeconds * 1000 + 10_000,
  );
  const left = /left:(.*)/.exec(out)?.[1]?.trim() ?? "";
  return left ? left.split(/\s+/) : [];
}

/** The killer's pid and start-time arguments; empty strings when the wrapper never said. */
function startArgs(start: WrapperStart | undefined): [string, string] {
  return start ? [String(start.pid), start.startTime] : ["", ""];
}

/** `promise`'s value, or undefined when it has not settled after `ms`. */
async function firstOf<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
