/**
 * Backpressure from whoever consumes a command's output to the exec's attach stream. While a
 * promise returned by `onOutput` is pending the stream is paused: the socket's buffers fill, the
 * engine stops reading the command's pipe, and the command blocks on write. Host memory stays at a
 * few buffers however slow the consumer is.
 *
 * Pausing also stops demuxing and end-marker detection, so:
 * - the "exec no longer runs" grace only counts time the stream flowed: output a finished command
 *   left in the buffers (and its marker) is read before the call ends, not dropped for a slow consumer;
 * - once the command is being killed, the stream must flow again (`drain`). Engine 20.10 handles a
 *   container's exec exits one at a time, and an exited exec whose stream is not read holds up the
 *   rest: the kill exec's own end was not reported until the paused stream was read (measured).
 *   Output the consumer is not ready for then ends what it gets, as a dead pipe would.
 */
import type { Readable } from "node:stream";
import createDebug from "debug";
import type { StreamName } from "./exec-types.js";
import type { OutputBuffer } from "./output-buffer.js";

const log = createDebug("harness:exec");

/** As `ExecOptions.onOutput`: a returned promise pauses reading until it settles. */
export type OnOutput = (stream: StreamName, chunk: Buffer) => void | Promise<void>;

/**
 * One chunk of a command's output: kept (head and tail) in `buffer`, then handed to `onOutput`
 * unless the flow has cut the consumer off; a promise it returns holds the stream until it settles.
 * A consumer that throws is logged and ignored: a display or saving callback must not take the
 * command (or the process) down with it.
 */
export function deliverChunk(
  flow: OutputFlow,
  buffer: OutputBuffer,
  name: StreamName,
  chunk: Buffer,
  onOutput: OnOutput | undefined,
): void {
  buffer.write(chunk);
  if (!flow.accepts()) return;
  try {
    const wait = onOutput?.(name, chunk);
    if (wait instanceof Promise) flow.hold(wait, onOutputFailed);
  } catch (error) {
    onOutputFailed(error);
  }
}

function onOutputFailed(error: unknown): void {
  log("onOutput failed: %s", (error as Error)?.message);
}

export class OutputFlow {
  private stream: Pick<Readable, "pause" | "resume"> | undefined;
  private waiting = 0;
  private streamPaused = false;
  private draining = false;
  private cut = false;
  private closed = false;
  private grace: Grace | undefined;

  /** The stream to pause; holds before this are applied once it is attached. */
  attach(stream: Pick<Readable, "pause" | "resume">): void {
    this.stream = stream;
    if (this.streamPaused) stream.pause();
  }

  /**
   * Whether the next chunk goes to the consumer. False for good once a chunk came while draining
   * and the consumer was still behind.
   */
  accepts(): boolean {
    if (this.draining && this.waiting > 0) this.cut = true;
    return !this.cut;
  }

  /** Pauses the stream until `wait` settles. A rejection counts as settled and goes to `onError`. */
  hold(wait: Promise<unknown>, onError: (error: unknown) => void): void {
    this.waiting += 1;
    this.update();
    const release = () => {
      this.waiting -= 1;
      this.update();
    };
    wait.then(release, (error: unknown) => {
      onError(error);
      release();
    });
  }

  /** The command is being killed: read on whatever the consumer does, so the engine can wind down. */
  drain(): void {
    this.draining = true;
    this.update();
  }

  /** Calls `run` once the stream has flowed for `ms` in all, from now; later calls are ignored. */
  afterFlowing(ms: number, run: () => void): void {
    if (this.grace !== undefined || this.closed) return;
    this.grace = { remainingMs: ms, startedAt: 0, timer: undefined, run };
    if (!this.streamPaused) this.startGrace();
  }

  /**
   * The call is over but its stream lives on (the executor's serves the next call): close, and never
   * leave the stream paused for a consumer this call no longer waits for.
   */
  detach(): void {
    this.close();
    if (this.streamPaused) this.stream?.resume();
    this.streamPaused = false;
    this.stream = undefined;
  }

  /** The exec is over: no more resumes or timers. */
  close(): void {
    this.stopGrace();
    this.closed = true;
  }

  private update(): void {
    const pause = this.waiting > 0 && !this.draining;
    if (pause === this.streamPaused || this.closed) return;
    this.streamPaused = pause;
    if (pause) {
      this.stream?.pause();
      this.stopGrace();
    } else {
      this.stream?.resume();
      this.startGrace();
    }
  }

  private startGrace(): void {
    const grace = this.grace;
    if (grace === undefined || grace.timer !== undefined || this.closed) return;
    grace.startedAt = performance.now();
    grace.timer = setTimeout(grace.run, grace.remainingMs);
    grace.timer.unref();
  }

  private stopGrace(): void {
    const grace = this.grace;
    if (grace?.timer === undefined) return;
    clearTimeout(grace.timer);
    grace.timer = undefined;
    grace.remainingMs = Math.max(0, grace.remainingMs - (performance.now() - grace.startedAt));
  }
}

interface Grace {
  remainingMs: number;
  startedAt: number;
  timer: NodeJS.Timeout | undefined;
  run: () => void;
}
