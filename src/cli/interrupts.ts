/**
 * Ctrl-C handling: the first press aborts the work in progress (the running command is killed in the
 * container and the turn ends); a second press while that is still winding down quits at once. At an
 * idle prompt a press quits.
 */
export class Interrupts {
  private controller: AbortController | undefined;
  /** Set when stdout's reader went away: nothing more is worth doing (see `outputGone`). */
  private gone = false;

  constructor(
    private readonly onQuit: () => void,
    private readonly stderr: NodeJS.WritableStream = process.stderr,
  ) {
    process.on("SIGINT", () => this.press());
  }

  /** A signal for one unit of work (a run, a command); aborted by the next Ctrl-C. */
  begin(): AbortSignal {
    this.controller = new AbortController();
    if (this.gone) this.controller.abort();
    return this.controller.signal;
  }

  /** The unit of work is over: a Ctrl-C now quits. */
  end(): void {
    this.controller = undefined;
  }

  /**
   * stdout's reader went away (`harness run ... | head`): like a shell's SIGPIPE, the running
   * command is stopped in the container and no new work starts. Quiet: there is no one to tell.
   */
  outputGone(): void {
    this.gone = true;
    this.controller?.abort();
  }

  /** True once `outputGone` was called. */
  get isOutputGone(): boolean {
    return this.gone;
  }

  /** One Ctrl-C, from the signal or from readline's keypress. */
  press(): void {
    const current = this.controller;
    if (current && !current.signal.aborted) {
      this.stderr.write("\nharness: interrupted: stopping the running command (Ctrl-C again to quit now)\n");
      current.abort();
      return;
    }
    this.onQuit();
  }
}
