/**
 * A command's request to the executor (or Docker's per-call path), built the same way by every
 * engine: where it runs and starts, its timeout and signal, and the output and kill limits from
 * the sandbox's options, else the defaults.
 */
import type { ExecRequest } from "../exec/exec-types.js";
import type { ExecOptions } from "../sandbox.js";
import { SANDBOX_DEFAULTS } from "../sandbox-request.js";

/** The sandbox's options a request takes its limits from. */
export interface RequestLimits {
  outputHeadBytes?: number | undefined;
  outputTailBytes?: number | undefined;
  /** Seconds between TERM and KILL when a command is killed. */
  killGraceSeconds?: number | undefined;
}

/** Where and for how long the command runs; `startDir` is kept by the sandbox, never in the container. */
export interface RequestPlace {
  user: string;
  workdir: string;
  startDir: string;
  timeoutMs: number;
}

export function execRequest(
  command: string,
  options: Pick<ExecOptions, "signal" | "onOutput">,
  place: RequestPlace,
  limits: RequestLimits,
  /** `KEY=value` entries added to the command's environment (allowlist mode's proxy variables). */
  env: readonly string[] | undefined,
): ExecRequest {
  return {
    command,
    user: place.user,
    workdir: place.workdir,
    startDir: place.startDir,
    timeoutMs: place.timeoutMs,
    signal: options.signal,
    onOutput: options.onOutput,
    headBytes: limits.outputHeadBytes ?? SANDBOX_DEFAULTS.outputHeadBytes,
    tailBytes: limits.outputTailBytes ?? SANDBOX_DEFAULTS.outputTailBytes,
    killGraceSeconds: limits.killGraceSeconds ?? SANDBOX_DEFAULTS.killGraceSeconds,
    env,
  };
}
