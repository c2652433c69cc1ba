/**
 * Where `harness exec` sends the command's output: its own stdout and stderr, with backpressure and a
 * way out. A write that fills a stream's buffer hands the sandbox a promise that settles on 'drain',
 * so reading from the container pauses and the command blocks on its full pipe: a slow reader costs
 * no host memory. A stream whose reader went away (EPIPE) aborts the command, which is then killed
 * inside the container, as SIGPIPE ends a command in a shell pipeline.
 */
import { CommandOutputStream } from "../../terminal/command-output.js";
import { sanitizeForTerminal } from "../../terminal/sanitize.js";
import { colorEnabled } from "../../terminal/style.js";

type StreamName = "stdout" | "stderr";

/** What is used of `process.stdout` / `process.stderr`. */
export interface OutputStream {
  isTTY?: boolean;
  writableNeedDrain: boolean;
  write(chunk: string | Buffer): boolean;
  on(event: "error", listener: (error: Error) => void): unknown;
  once(event: "drain" | "close" | "error", listener: () => void): unknown;
  off(event: "drain" | "close" | "error", listener: () => void): unknown;
}

export class ExecOutput {
  private readonly controller = new AbortController();
  private readonly failed = new Set<StreamName>();
  /** One wait per full stream, shared by every write made meanwhile (a read brings many frames). */
  private readonly draining: Partial<Record<StreamName, Promise<void>>> = {};
  /** A terminal's view of each stream (colour kept, every other control shown); none when piped. */
  private readonly terminal: Partial<Record<StreamName, CommandOutputStream>> = {};

  constructor(
    private readonly streams: Record<StreamName, OutputStream>,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    for (const name of ["stdout", "stderr"] as const) {
      // Kept for the life of the process: a later write to a closed pipe must not crash either.
      streams[name].on("error", () => {
        this.failed.add(name);
        this.controller.abort();
      });
    }
  }

  /** True once a stream's reader went away (or the stream failed otherwise): no output is written after. */
  get broken(): boolean {
    return this.failed.size > 0;
  }

  /** Aborted once a stream failed: the command's output has nowhere to go. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** For `ExecOptions.onOutput`: a promise when the stream is full, settled once it drained or failed. */
  readonly write = (name: StreamName, chunk: Buffer): Promise<void> | undefined => {
    if (this.broken) return undefined;
    const stream = this.streams[name];
    // Piped output stays byte-exact; a terminal gets no control sequences from the sandbox but colour.
    if (stream.isTTY) this.terminal[name] ??= new CommandOutputStream(colorEnabled(stream, this.env));
    const terminal = this.terminal[name];
    if (stream.write(terminal ? terminal.write(chunk) : chunk)) return undefined;
    this.draining[name] ??= this.drained(stream).finally(() => {
      delete this.draining[name];
    });
    return this.draining[name];
  };

  /**
   * The command's output is over: on a terminal, what was held back (an unfinished sequence) and a
   * reset of a colour the command left on, so that it does not paint what comes after.
   */
  finish(): void {
    for (const name of ["stdout", "stderr"] as const) {
      const rest = this.terminal[name]?.end() ?? "";
      if (rest !== "" && !this.failed.has(name)) this.streams[name].write(rest);
    }
  }

  /** One line of harness's own on stderr, unless stderr is gone. */
  note(text: string): void {
    if (this.failed.has("stderr")) return;
    this.streams.stderr.write(`harness: ${sanitizeForTerminal(text, { oneLine: true })}\n`);
  }

  private drained(stream: OutputStream): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        for (const event of ["drain", "close", "error"] as const) stream.off(event, done);
        resolve();
      };
      if (!stream.writableNeedDrain) return resolve();
      for (const event of ["drain", "close", "error"] as const) stream.once(event, done);
    });
  }
}
