/**
 * Ctrl-C handling: the first press aborts the work in progress (the running command is killed in the
 * container and the turn ends); a second press while that is still winding down, or a press at an
 * idle prompt, ends the session (session-end.ts), which runs the same end as SIGTERM.
 */
import type { SessionEnd } from "./session-end.js";

export class Interrupts {
  private controller: AbortController | undefined;

  constructor(
    /** The process's one session end: every signal handed out here is aborted by it too. */
    readonly session: SessionEnd,
    private readonly stderr: NodeJS.WritableStream = process.stderr,
    listen = true,
  ) {
    if (listen) process.on("SIGINT", () => this.press());
  }

  /** A signal for one unit of work (a run, a command); aborted by the next Ctrl-C or by the session's end. */
  begin(): AbortSignal {
    this.controller = new AbortController();
    return AbortSignal.any([this.controller.signal, this.session.signal]);
  }

  /** The unit of work is over: a Ctrl-C now ends the session. */
  end(): void {
    this.controller = undefined;
  }

  /** True once the session is ending: no new work is worth starting. */
  get ending(): boolean {
    return this.session.signal.aborted;
  }

  /** One Ctrl-C, from the signal or from readline's keypress. */
  press(): void {
    const current = this.controller;
    if (current && !current.signal.aborted && !this.ending) {
      if (!this.session.stderrGone)
        this.stderr.write("\nharness: interrupted: stopping the running command (Ctrl-C again to quit)\n");
      current.abort();
      return;
    }
    this.session.end({ kind: "signal", signal: "SIGINT" });
  }
}
