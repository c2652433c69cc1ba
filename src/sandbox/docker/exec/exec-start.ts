/**
 * Creating and starting an exec, each under a deadline. A wedged engine may answer neither call, and
 * the caller must be able to tell "never started" (a rejection here: restart the container) from
 * anything the command did. The command's own timeout and abort only apply once it runs.
 */
import type { Duplex } from "node:stream";
import type Docker from "dockerode";

/** An exec the engine created and started, with its attach stream (multiplexed: `Tty: false`). */
export interface StartedExec {
  exec: Docker.Exec;
  stream: Duplex;
}

/**
 * Creates and starts an exec; rejects when either step is not answered within `deadlineMs`. With
 * `AttachStdin` the stream also carries the exec's stdin (ending it closes the process's stdin).
 */
export async function startExec(
  container: Docker.Container,
  options: Docker.ExecCreateOptions,
  deadlineMs: number,
  what: string,
): Promise<StartedExec> {
  const exec = await withDeadline(container.exec(options), deadlineMs, `creating ${what}`);
  const stream: Duplex = await withDeadline(
    exec.start({ hijack: true, stdin: options.AttachStdin === true }),
    deadlineMs,
    `starting ${what}`,
  );
  return { exec, stream };
}

/** Rejects when `promise` has not settled after `ms`. */
async function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
