/**
 * How the command ended, as the caller gets it. The wrapper's stdout marker reports
 * "exit code:OOM kills:background count:cwd"; when it never came (the wrapper was killed from outside, or the kill
 * got there first) only ExecInspect's exit code is left, and nothing about OOM kills or the cwd.
 */
import type Docker from "dockerode";
import type { ExecOutcome } from "../../exec/exec-types.js";

export interface CommandEnd {
  /** From the marker, else from ExecInspect; undefined if neither said. */
  exitCode: number | undefined;
  /** OOM kills the memory cgroup counted while the command ran (0 when unknown). */
  oomKills: number;
  /** The cwd the command left behind, when the wrapper lived to report it. */
  endCwd: string | undefined;
  /**
   * Processes the wrapper saw still running in the background after the command (0 when it never
   * reported). The command can print a marker of its own, so this only decides whether the host
   * looks (`docker top`); what is listed comes from that look alone.
   */
  backgroundCount: number;
  /** The wrapper never reported. */
  wrapperLost: boolean;
}

/** `report` is the stdout marker's payload, undefined when it never arrived. */
export async function readCommandEnd(report: string | undefined, exec: Docker.Exec): Promise<CommandEnd> {
  if (report === undefined) {
    const exitCode = await exec
      .inspect()
      .then((info) => info.ExitCode ?? undefined)
      .catch(() => undefined);
    return {
      exitCode: validCode(exitCode),
      oomKills: 0,
      endCwd: undefined,
      backgroundCount: 0,
      wrapperLost: true,
    };
  }
  const [rc = "", oom = "0", background = "0", ...cwdParts] = report.split(":");
  return {
    exitCode: validCode(Number.parseInt(rc, 10)),
    oomKills: Number.parseInt(oom, 10) || 0,
    endCwd: plausibleCwd(cwdParts.join(":")),
    backgroundCount: Number.parseInt(background, 10) || 0,
    wrapperLost: false,
  };
}

function validCode(code: number | undefined): number | undefined {
  return Number.isNaN(code) ? undefined : code;
}

/** The end cwd the command's shell reported: the command controls it, so only a sane absolute path. */
function plausibleCwd(path: string): string | undefined {
  return path.startsWith("/") && path.length <= 4096 ? path : undefined;
}

/**
 * True when the wrapper died before starting the command, so running it again cannot repeat any of
 * its effects: runc failed to exec (exit 126, e.g. no pids left), or the wrapper's own fork failed
 * (dash prints "harness-exec: N: Cannot fork", naming the wrapper's $0, and exits 2; the wrapper
 * forks only before the command).
 */
export function neverStarted(o: ExecOutcome): boolean {
  if (!o.wrapperLost) return false;
  const output = `${o.stdout.toString()}\n${o.stderr.toString()}`;
  if (o.exitCode === 126 && /OCI runtime exec failed/.test(output)) return true;
  return o.exitCode === 2 && /^harness-exec: \d+: Cannot fork$/m.test(o.stderr.toString());
}
