/** From what an exec did (`ExecOutcome`) to what the caller gets (`ExecResult`). */

import type { ExecResult } from "../sandbox.js";
import type { ExecOutcome } from "./exec-types.js";

export interface ResultContext {
  /** The timeout the command ran with. */
  timeoutMs: number;
  /** The container's memory limit, named in an OOM message. */
  memoryBytes: number;
  /** The directory the command started in. */
  cwd: string;
  /** What the sandbox did around this command (recoveries), for the model. */
  notices: string[];
}

export function toExecResult(command: string, o: ExecOutcome, context: ResultContext): ExecResult {
  const oomKilled = o.oomKills > 0;
  const notices = [...context.notices];
  if (o.survivors.length > 0) {
    notices.push(
      `processes still running after the kill (pids ${o.survivors.join(" ")}): they left the command's session and cleared its environment tag`,
    );
  }
  const shortMessage = o.timedOut
    ? `Command timed out after ${context.timeoutMs} milliseconds`
    : o.canceled
      ? "Command was canceled"
      : oomKilled
        ? `Command was killed by the out-of-memory killer (memory limit ${Math.round(context.memoryBytes / 1024 ** 2)} MiB)`
        : o.exitCode === 0
          ? ""
          : `Command failed with exit code ${o.exitCode ?? "unknown"}`;
  const stdout = o.stdout.decoded();
  const stderr = o.stderr.decoded();
  const notText = stdout.notTextBytes + stderr.notTextBytes > 0;
  return {
    command,
    stdout: stdout.text,
    stderr: stderr.text,
    exitCode: o.exitCode,
    failed: o.exitCode !== 0 || o.timedOut || o.canceled,
    timedOut: o.timedOut,
    isCanceled: o.canceled,
    isTruncated: o.stdout.isTruncated || o.stderr.isTruncated,
    oomKilled,
    stdoutBytes: o.stdout.totalBytes,
    stderrBytes: o.stderr.totalBytes,
    ...(notText ? { notTextBytes: { stdout: stdout.notTextBytes, stderr: stderr.notTextBytes } } : {}),
    durationMs: o.durationMs,
    cwd: context.cwd,
    shortMessage,
    notices,
    ...(o.background.length > 0 ? { background: o.background } : {}),
  };
}
