/**
 * How a harness process ends, whatever ends it. Every way (SIGTERM, SIGHUP, a second Ctrl-C, the
 * reader of stdout or stderr going away, an error nobody caught) takes one path, the one SIGTERM
 * always took in `harness mcp` and `batch`: the first aborts `signal`, so the running command is
 * killed in the sandbox, no new work starts, and the command's own end runs (run_end written, the
 * sandbox stopped: its processes ended, the git files it planted moved aside, its lease given up).
 * The exit code then says what ended it (exit-codes.ts, `exitCodeForEnd`).
 *
 * An error nobody caught leaves no command to trust to unwind. For it, what every end needs is held
 * here (`hold`: each sandbox's stop, each transcript's run_end, the checkpoints), and those run
 * directly, then the process exits. A held end runs once whoever asks first, so the command's own
 * end and a forced one wait for the same work. Nothing that comes during the end cuts it short: a
 * second signal is told the end is under way, and that is all.
 */

/** The signals that end a session: Ctrl-C (the second, or one at an idle prompt), kill, a closed terminal. */
export type EndSignal = "SIGINT" | "SIGTERM" | "SIGHUP";

export type EndCause =
  | { kind: "signal"; signal: EndSignal }
  /** stdout or stderr failed: its reader went away (EPIPE), the disk is full (ENOSPC), the terminal is gone (EIO). */
  | { kind: "output"; stream: "stdout" | "stderr"; code: string | undefined }
  /**
   * A file the session cannot go on without could not be written (the transcript, on a full disk):
   * the run ends rather than going on unrecorded.
   */
  | { kind: "write"; path: string; code: string | undefined }
  /** An error nobody caught (an exception, a rejection): the end is forced. */
  | { kind: "crash"; error: unknown };

/** A short name for the cause, as the transcript's run_end records it (`endedBy`). */
export function causeName(cause: EndCause): string {
  if (cause.kind === "signal") return cause.signal;
  if (cause.kind === "crash") return "internal-error";
  if (cause.kind === "write") return "write-failed";
  return cause.code === "EPIPE" ? `${cause.stream}-closed` : `${cause.stream}-failed`;
}

export interface SessionEndOptions {
  /**
   * Ends the process once a forced end is done (cli.ts: `process.exit` with the cause's code). Only
   * an error nobody caught forces the end; every other cause lets the command return.
   */
  exit: (cause: EndCause) => void;
  /** One line for the user (stderr, which may be what failed: then nothing is written). */
  say: (line: string) => void;
}

interface Held {
  readonly what: string;
  run(): Promise<void>;
}

/** What `hold` gives back. */
export interface HeldEnd {
  /** Runs the end, once; a second call waits for the first. */
  end(): Promise<void>;
  /** No longer needed: a forced end leaves it alone. */
  release(): void;
}

export class SessionEnd {
  private readonly controller = new AbortController();
  private first: EndCause | undefined;
  private readonly held = new Set<Held>();
  private toldAgain = false;
  private forcing = false;

  constructor(private readonly options: SessionEndOptions) {}

  /** Aborted by the first cause: every command's work watches it (through `Interrupts.begin`). */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** What ended the session; undefined while nothing has (the command ends by itself). */
  get cause(): EndCause | undefined {
    return this.first;
  }

  /** True once stderr failed: harness's own lines have nowhere to go. */
  get stderrGone(): boolean {
    return this.first?.kind === "output" && this.first.stream === "stderr";
  }

  /**
   * Ends the session. The first cause aborts `signal`; any later one changes nothing (the end is
   * under way, and is not cut short), except an error nobody caught, which forces the end.
   */
  end(cause: EndCause): void {
    if (this.first === undefined) {
      this.first = cause;
      // A reader that went away is told nothing, as a shell's SIGPIPE tells nobody.
      if (cause.kind !== "output" || (cause.stream === "stdout" && cause.code !== "EPIPE"))
        this.options.say(startLine(cause));
      this.controller.abort(cause);
    } else if (cause.kind === "signal" && !this.toldAgain) {
      this.toldAgain = true;
      this.options.say(
        `${cause.signal}: the session is already ending (stopping the sandbox's processes, moving planted git files aside); it is not cut short`,
      );
    }
    if (cause.kind === "crash") void this.force(cause);
  }

  /**
   * Holds `end`, which the session's end needs whatever happens (a sandbox's stop, a transcript's
   * run_end). `end()` runs it at most once: the command calls it in its own end, and a forced end
   * calls it too; whoever comes second waits for the first. Once it has run, or been released (its
   * owner is done without it), it is no longer held.
   */
  hold(what: string, end: () => Promise<void> | void): HeldEnd {
    let running: Promise<void> | undefined;
    const held: Held = {
      what,
      run: () => {
        running ??= (async () => {
          try {
            await end();
          } finally {
            this.held.delete(held);
          }
        })();
        return running;
      },
    };
    this.held.add(held);
    return { end: held.run, release: () => this.held.delete(held) };
  }

  /** The ends still held, newest first (for tests and the forced end). */
  get holding(): string[] {
    return [...this.held].reverse().map((h) => h.what);
  }

  /** Runs every held end, newest first (a transcript before its sandbox), then exits. */
  private async force(cause: EndCause): Promise<void> {
    if (this.forcing) return;
    this.forcing = true;
    // Held ends registered while these run (a sandbox whose open was under way) are run too.
    for (let next = this.newest(); next !== undefined; next = this.newest()) {
      try {
        await next.run();
      } catch (error) {
        this.held.delete(next);
        this.options.say(`ending the session: ${next.what} failed: ${(error as Error).message}`);
      }
    }
    this.options.exit(this.first ?? cause);
  }

  private newest(): Held | undefined {
    return [...this.held].at(-1);
  }
}

function startLine(cause: EndCause): string {
  const ending = "ending the session (the running command is stopped, then the sandbox)";
  if (cause.kind === "signal") return `${cause.signal}: ${ending}`;
  if (cause.kind === "output") return `${cause.stream} failed (${cause.code ?? "error"}): ${ending}`;
  if (cause.kind === "write")
    return `${cause.path} could not be written (${cause.code ?? "error"}): ${ending}`;
  const message = cause.error instanceof Error ? cause.error.message : String(cause.error);
  return `internal error: ${message.split("\n")[0] ?? ""}; ${ending}`;
}
