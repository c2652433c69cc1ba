/**
 * What the machinery's small sh programs share, on every engine: the command tag, PID 1's child, the
 * state tmpfs, and the kill program (kill.sh, beside this file; Docker's per-call wrapper is
 * ../docker/per-call/wrapper-script.ts, PID 1 and the health check
 * ../docker/container/container-scripts.ts). They use shell builtins where they can (each fork costs
 * ~3 ms) and need nothing but /bin/sh, so `--image` works with any image; the constants they need
 * come as arguments.
 */
import { programText } from "./program-text.js";

/**
 * A tiny tmpfs every sandbox mounts (Docker's container-spec.ts, the pod's pod-spec.ts). harness
 * keeps no state in it: all of it is writable by the command, so a fifo, link or garbage planted
 * there would hang or steer whatever read it. The start directory and the wrapper's pid and start
 * time are kept on the host and passed as arguments.
 */
export const STATE_DIR = "/run/harness";

/** The env var that tags every process of one command; the killer finds them by it. */
export const EXEC_TAG_VAR = "HARNESS_EXEC";

/** How long PID 1's one child sleeps (container/init.sh takes it as its argument). */
export const INIT_SLEEP_SECONDS = "2147483647";

/** The one child PID 1 keeps, as `ps` shows it: with it alone beside PID 1, nothing else runs. */
export const INIT_CHILD = `sleep ${INIT_SLEEP_SECONDS}`;

/** The kill program's argv (kill.sh): the command's tag, the grace, the wrapper's pid and start time. */
export function killCommand(tag: string, graceSeconds: number, pid: string, startTime: string): string[] {
  const script = programText(new URL("./kill.sh", import.meta.url));
  return ["/bin/sh", "-c", script, "harness-kill", tag, String(graceSeconds), pid, startTime, EXEC_TAG_VAR];
}
