/**
 * The process-wide ways a session ends, each handed to the one `SessionEnd`: installed first thing,
 * before harness writes a byte, so that no way of ending crashes harness past its end.
 *
 * - SIGTERM (a client or a supervisor stopping harness) and SIGHUP (the terminal closed): Node's
 *   default would exit at once, with the running command and the planted files left as they were.
 * - stdout and stderr failing: a reader that went away (EPIPE, `| head`), a full disk (ENOSPC), a
 *   terminal that is gone (EIO). Without a listener the stream's 'error' crashed harness; and the
 *   listener is kept for the process's life, so a later write to a closed pipe does not crash either.
 * - An error nobody caught, thrown or rejected (in a writer's 'error' event, say): the forced end.
 *
 * SIGINT is `Interrupts`' (interrupts.ts): its first press only cancels the running work.
 */
import type { EndSignal, SessionEnd } from "./session-end.js";

/** What is used of `process`. */
export interface ProcessLike {
  on(event: EndSignal, listener: () => void): unknown;
  on(event: "uncaughtException", listener: (error: unknown) => void): unknown;
  stdout: { on(event: "error", listener: (error: Error) => void): unknown };
  stderr: { on(event: "error", listener: (error: Error) => void): unknown };
}

export function watchProcessEnds(session: SessionEnd, proc: ProcessLike = process): void {
  for (const signal of ["SIGTERM", "SIGHUP"] as const) {
    proc.on(signal, () => session.end({ kind: "signal", signal }));
  }
  for (const stream of ["stdout", "stderr"] as const) {
    proc[stream].on("error", (error) =>
      session.end({ kind: "output", stream, code: (error as NodeJS.ErrnoException).code }),
    );
  }
  // An unhandled rejection reaches this listener too (Node's default mode throws it as one).
  proc.on("uncaughtException", (error) => session.end({ kind: "crash", error }));
}
