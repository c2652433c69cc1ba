/**
 * One command as every command path sees it, whatever the engine: the request it is run from and
 * the outcome it ends in (Docker's executor and per-call path, the pod's executor), before the
 * outcome becomes the caller's `ExecResult` (`exec-outcome.ts`).
 */
import type { BackgroundProcess } from "../sandbox.js";
import type { OutputBuffer } from "./output-buffer.js";

/** The two streams a command writes, kept apart from start to end. */
export type StreamName = "stdout" | "stderr";

export interface ExecRequest {
  command: string;
  /** "uid:gid" the command runs as. */
  user: string;
  /** The workspace path in the container: the fallback when `startDir` is gone or unusable. */
  workdir: string;
  /** Where the command starts: the cwd the previous command left, kept by the caller. */
  startDir: string;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  /** As `ExecOptions.onOutput`: a returned promise pauses reading until it settles. */
  onOutput?: ((stream: StreamName, chunk: Buffer) => void | Promise<void>) | undefined;
  headBytes: number;
  tailBytes: number;
  /** Seconds between TERM and KILL. */
  killGraceSeconds: number;
  /** How long creating and starting the exec may take. Default 30 s. */
  startDeadlineMs?: number;
  /** `KEY=value` entries added to the command's environment (allowlist mode's proxy variables). */
  env?: readonly string[] | undefined;
}

export interface ExecOutcome {
  stdout: OutputBuffer;
  stderr: OutputBuffer;
  /** From the executor's end frame or the wrapper's end marker, else from the engine; undefined if none said. */
  exitCode: number | undefined;
  /** OOM kills the memory cgroup counted while the command ran (0 when unknown). */
  oomKills: number;
  /** The cwd the command left behind, when the wrapper lived to report it. */
  endCwd: string | undefined;
  timedOut: boolean;
  canceled: boolean;
  /** The kill exec itself failed (e.g. the pid limit is exhausted): the container needs a restart. */
  killFailed: boolean;
  /** Processes still carrying the command's tag after the kill (pids), e.g. in another session. */
  survivors: string[];
  /** The wrapper (or executor) never reported the end: killed from outside (e.g. `kill -9 -1`). */
  wrapperLost: boolean;
  /** How many processes the wrapper's end marker says still run in the background (0 without a marker). */
  backgroundCount: number;
  /**
   * Those jobs as the engine lists them (Docker: `docker top`; none where the engine cannot look from
   * outside), asked only when the count is nonzero.
   */
  background: BackgroundProcess[];
  durationMs: number;
}
