/**
 * One command on the executor, as the host follows it: the frames of its nonce become output (head
 * and tail kept, each chunk handed to `onOutput`, whose pending promises pause the executor's stream)
 * and, at the end, how it ended. Frames of any other nonce are not this call's and are dropped.
 */
import type { Readable } from "node:stream";
import createDebug from "debug";
import type { StreamName } from "../exec/exec-types.js";
import { OutputBuffer } from "../exec/output-buffer.js";
import { deliverChunk, OutputFlow } from "../exec/output-flow.js";
import type { Frame } from "./executor-frames.js";
import { FRAME } from "./executor-protocol.js";

const log = createDebug("harness:executor");

/** What the `S` frame says: the command's shell, for a kill from outside if the executor fails. */
export interface CallStarted {
  pid: number;
  start: number;
}

/** What the `X` frame says. */
export interface CallEnd {
  code: number;
  oom: number;
  background: number;
  cwd: string | null;
  survivors: number[];
}

/** How the wait for the start went. */
export type StartAnswer =
  | { kind: "started"; started: CallStarted }
  | { kind: "failed"; why: string }
  | { kind: "lost" }
  | { kind: "silent" };

/** How the wait for the end went: the executor's report, or its stream ended first. */
export type EndAnswer = { kind: "end"; end: CallEnd } | { kind: "lost" };

export interface CallOutputOptions {
  headBytes: number;
  tailBytes: number;
  onOutput?: ((stream: StreamName, chunk: Buffer) => void | Promise<void>) | undefined;
}

export class ExecutorCall {
  readonly stdout: OutputBuffer;
  readonly stderr: OutputBuffer;
  readonly flow = new OutputFlow();
  started: CallStarted | undefined;
  private startWaiters: ((answer: StartAnswer) => void)[] = [];
  private endWaiters: ((answer: EndAnswer) => void)[] = [];
  private startAnswer: StartAnswer | undefined;
  private endAnswer: EndAnswer | undefined;

  constructor(
    readonly nonce: string,
    private readonly options: CallOutputOptions,
    stream: Pick<Readable, "pause" | "resume">,
  ) {
    this.stdout = new OutputBuffer(options.headBytes, options.tailBytes);
    this.stderr = new OutputBuffer(options.headBytes, options.tailBytes);
    this.flow.attach(stream);
  }

  /** A frame from the executor; only this call's nonce counts. */
  onFrame(frame: Frame): void {
    if (frame.nonce !== this.nonce) {
      log("dropped a %s frame of another call", frame.kind);
      return;
    }
    switch (frame.kind) {
      case FRAME.stdout:
        this.forward("stdout", frame.payload);
        return;
      case FRAME.stderr:
        this.forward("stderr", frame.payload);
        return;
      case FRAME.started:
        this.started = JSON.parse(frame.payload.toString("utf8")) as CallStarted;
        this.answerStart({ kind: "started", started: this.started });
        return;
      case FRAME.failed:
        this.answerStart({ kind: "failed", why: String(JSON.parse(frame.payload.toString("utf8")).error) });
        this.answerEnd({ kind: "lost" });
        return;
      case FRAME.end:
        this.answerEnd({ kind: "end", end: JSON.parse(frame.payload.toString("utf8")) as CallEnd });
        return;
      default:
        log("unknown frame kind %s", frame.kind);
    }
  }

  /** The executor's stream ended: nothing more comes for this call. */
  onLost(): void {
    this.answerStart({ kind: "lost" });
    this.answerEnd({ kind: "lost" });
  }

  /** The start frame, or why there is none; "silent" when nothing came within `ms`. */
  whenStarted(ms: number): Promise<StartAnswer> {
    if (this.startAnswer) return Promise.resolve(this.startAnswer);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve({ kind: "silent" }), ms);
      this.startWaiters.push((answer) => {
        clearTimeout(timer);
        resolve(answer);
      });
    });
  }

  /** The end frame, or the stream's end. */
  whenEnded(): Promise<EndAnswer> {
    if (this.endAnswer) return Promise.resolve(this.endAnswer);
    return new Promise((resolve) => this.endWaiters.push(resolve));
  }

  private answerStart(answer: StartAnswer): void {
    if (this.startAnswer) return;
    this.startAnswer = answer;
    for (const waiter of this.startWaiters.splice(0)) waiter(answer);
  }

  private answerEnd(answer: EndAnswer): void {
    if (this.endAnswer) return;
    this.endAnswer = answer;
    for (const waiter of this.endWaiters.splice(0)) waiter(answer);
  }

  private forward(name: StreamName, chunk: Buffer): void {
    deliverChunk(this.flow, this[name], name, chunk, this.options.onOutput);
  }
}
