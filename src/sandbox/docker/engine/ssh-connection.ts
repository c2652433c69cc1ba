/**
 * One connection to an ssh:// engine: a Duplex over the stdin and stdout of one `ssh … docker system
 * dial-stdio` process, which Node's HTTP client uses as its socket. The connection ends when the
 * process exits, not when its pipes close: with ControlMaster the mux client hands its descriptors
 * to the master, which keeps them open after the client is gone.
 */
import type { ChildProcessByStdio } from "node:child_process";
import type { Socket } from "node:net";
import { Duplex, type Readable, type Writable } from "node:stream";

/** After ssh exits, how long output it left in the pipe may still be read before the stream ends. */
const EXIT_DRAIN_MS = 500;

/** ssh ended the connection other than cleanly: its exit and the last line it printed. */
export class SshConnectionError extends Error {
  override readonly name = "SshConnectionError";
  constructor(
    message: string,
    /** ssh's exit code (255: ssh's own failure), or null when a signal ended it. */
    readonly exitCode: number | null,
    readonly signal: NodeJS.Signals | null,
  ) {
    super(message);
  }

  /**
   * The host stopped answering, as opposed to refusing: ssh's connect or banner timeout ("Connection
   * timed out", "… timed out during banner exchange") or its keepalive one ("Timeout, server … not
   * responding"). Each such failure took seconds to be noticed.
   */
  get unanswered(): boolean {
    return this.exitCode === 255 && /timed out|Timeout, server/i.test(this.message);
  }
}

export class SshConnection extends Duplex {
  private stderr = "";
  private exitError: SshConnectionError | undefined;

  constructor(
    private readonly child: ChildProcessByStdio<Writable, Readable, Readable>,
    private readonly host: string,
  ) {
    super({ allowHalfOpen: true });
    child.stdout.on("data", (chunk: Buffer) => {
      if (!this.push(chunk)) child.stdout.pause();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      this.stderr = (this.stderr + chunk.toString()).slice(-4000);
    });
    // Writes after the process died fail in _write with ssh's own words, not EPIPE.
    child.stdin.on("error", () => {});
    child.on("error", (error: NodeJS.ErrnoException) => {
      const why = error.code === "ENOENT" ? "no 'ssh' command on PATH" : error.message;
      this.destroy(new SshConnectionError(`ssh to ${host} could not start: ${why}`, null, null));
    });
    child.once("exit", (code, signal) => this.onExit(code, signal));
  }

  private onExit(code: number | null, signal: NodeJS.Signals | null): void {
    // Writes from now on fail with ssh's words; the message is made again once stderr is read out.
    if (code !== 0) this.exitError = this.errorFor(code, signal);
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (this.destroyed) return;
      if (code !== 0) {
        this.destroy(this.errorFor(code, signal));
        return;
      }
      this.push(null);
      // An idle connection in the agent's pool has no reader to see the end: close it now.
      if (this.listenerCount("data") === 0) this.destroy();
      else this.once("end", () => this.destroy());
    };
    // Output and ssh's last words may still be in the pipes; something holding them (a ControlMaster)
    // must not hold the connection too.
    const timer = setTimeout(finish, EXIT_DRAIN_MS);
    const open = [this.child.stdout, this.child.stderr].filter((pipe) => !pipe.readableEnded);
    let pending = open.length;
    for (const pipe of open)
      pipe.once("end", () => {
        pending -= 1;
        if (pending === 0) finish();
      });
    if (pending === 0) finish();
  }

  private errorFor(code: number | null, signal: NodeJS.Signals | null): SshConnectionError {
    const last = this.stderr.trim().split("\n").pop()?.trim() ?? "";
    const how = signal ? `killed by ${signal}` : `exit ${code}`;
    return new SshConnectionError(
      `ssh to ${this.host} ended (${how})${last ? `: ${last}` : ""}`,
      code,
      signal,
    );
  }

  override _read(): void {
    this.child.stdout.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.exitError) {
      callback(this.exitError);
      return;
    }
    this.child.stdin.write(chunk, (error) => callback(error ? (this.exitError ?? error) : null));
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.child.stdin.end(callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGTERM");
    callback(error);
  }

  // What Node's HTTP client and agent call on a socket; a pipe to a process has none of these knobs.
  setTimeout(): this {
    return this;
  }
  setNoDelay(): this {
    return this;
  }
  setKeepAlive(): this {
    return this;
  }
  /** The agent unrefs a connection it keeps for later: an idle ssh must not keep harness running. */
  ref(): this {
    this.child.ref();
    for (const pipe of this.pipes()) pipe.ref();
    return this;
  }
  unref(): this {
    this.child.unref();
    for (const pipe of this.pipes()) pipe.unref();
    return this;
  }

  /** The child's stdio are net.Sockets over pipes, which can be unreferenced like any other. */
  private pipes(): Socket[] {
    return [this.child.stdin, this.child.stdout, this.child.stderr] as unknown as Socket[];
  }
}
