/**
 * TEST-ONLY: named points where the fault suite (test/faults/) kills harness, so that a test can
 * SIGKILL it at an exact step instead of racing it with a timer. `HARNESS_FAULT_POINT=NAME:kill`
 * makes the process SIGKILL itself when it reaches NAME (`apply:staged`, ...; see docs/copy-mode.md).
 * Unset (always, outside those tests) it does nothing. This is the only place that reads the variable.
 */

/** SIGKILLs this process when `HARNESS_FAULT_POINT` names this point with `:kill`. */
export function faultPoint(name: string): void {
  const wanted = process.env["HARNESS_FAULT_POINT"];
  if (wanted === undefined || wanted !== `${name}:kill`) return;
  process.kill(process.pid, "SIGKILL");
}
