/** PID 1 of the container (init.sh) and its health check (health.sh), both beside this file. */
import { INIT_SLEEP_SECONDS } from "../../exec/exec-scripts.js";
import { programText } from "../../exec/program-text.js";

/** The container's command: PID 1, as harness's machinery (container-spec.ts MACHINERY_USER). */
export function initCommand(): string[] {
  return [
    "/bin/sh",
    "-c",
    programText(new URL("./init.sh", import.meta.url)),
    "harness-init",
    INIT_SLEEP_SECONDS,
  ];
}

function healthScript(): string {
  return programText(new URL("./health.sh", import.meta.url));
}

/** Docker's own health check: exits 1 ("unhealthy") when the pid limit leaves commands no room. */
export function containerHealthCommand(): string[] {
  return ["/bin/sh", "-c", healthScript(), "harness-health", "1"];
}

/**
 * harness's check before use and after a failed command: exits 3 when the pid limit is (nearly)
 * used up, and fails when no process can be started.
 */
export function healthCommand(): string[] {
  return ["/bin/sh", "-c", healthScript(), "harness-health", "3", "fork"];
}
