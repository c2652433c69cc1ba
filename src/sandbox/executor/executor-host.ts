/**
 * The host's side of the executor (executor.py), whatever the engine: its frames on the executor's
 * stdin, its frames from its stdout, one call at a time (the nonce, the start, the kill on timeout
 * or cancel, the end), its hello, census and bye, and the result. An engine's subclass says only how
 * bytes reach the executor and come back (docker/executor/executor.ts: an engine exec's attach
 * stream; kubernetes/pod-executor.ts: the API server's exec WebSocket) and how it kills from outside
 * when the executor is dead or silent.
 *
 * The subclass hands in what the executor writes (`receive`, `receiveStderr`) and the end of its
 * stream (`onEnd`).
 */
import { randomBytes } from "node:crypto";
import type { Readable } from "node:stream";
import type { Debugger } from "debug";
import { armKill } from "../exec/arm-kill.js";
import type { ExecOutcome, ExecRequest } from "../exec/exec-types.js";
import { type CallEnd, type CallStarted, ExecutorCall } from "./executor-call.js";
import { encodeFrame, type Frame, FrameDecoder } from "./executor-frames.js";
import { executorPayload, FRAME, NO_NONCE } from "./executor-protocol.js";

/** How long the executor may take to say a command started before it counts as stopped or wedged. */
const ACK_DEADLINE_MS = 10_000;
/** Beyond the kill's grace, how long the executor may take to report the end of a killed command. */
const KILL_ANSWER_SLACK_MS = 10_000;
/** The census reads /proc once (about a millisecond); any doubt falls back to asking the engine. */
const CENSUS_DEADLINE_MS = 2_000;

/** The executor's first frame. */
export interface Hello {
  pid: number;
  /** It made itself non-dumpable. */
  protected: boolean;
  shell: string;
  /** It keeps real and saved uid 0 and acts as the commands' uid (started as root). */
  root?: boolean;
  /** Each command gets a Landlock domain of its own (the kernel has Landlock). */
  landlock?: boolean;
}

/** Why a call on the executor did not give an outcome: the command never ran, so it may be retried. */
export type NotRun = { notRun: "fork-failed" | "executor-gone"; why: string };

export abstract class ExecutorHost {
  private readonly decoder: FrameDecoder;
  private current: ExecutorCall | undefined;
  /** True once its stream ended (it exited or was killed) or it was given up on. */
  protected ended = false;
  private queue: Promise<unknown> = Promise.resolve();
  private helloWaiter: ((hello: Hello | undefined) => void) | undefined;
  private censusWaiter: ((alone: boolean | undefined) => void) | undefined;
  private byeWaiter: (() => void) | undefined;
  /** The end of what it wrote to stderr, for the reason it did not start or ended. */
  protected stderrText = "";

  /** Its pid in the container, from its hello. */
  pid = 0;

  /** Whether it runs as root with the commands' uid as its effective uid, and gives each call a Landlock domain. */
  isolation = { root: false, landlock: false };

  protected constructor(protected readonly log: Debugger) {
    this.decoder = new FrameDecoder((frame) => this.onFrame(frame));
  }

  /** False once its stream ended (it exited or was killed) or it was given up on. */
  get alive(): boolean {
    return !this.ended;
  }

  /** Bytes for the executor's stdin. */
  protected abstract send(bytes: Buffer): void;
  /** What to pause while a call's output waits for its consumer. */
  protected abstract flowTarget(): Pick<Readable, "pause" | "resume">;
  /** Ends the executor's stdin; resolves when its stream has ended. */
  protected abstract endInput(): Promise<void>;
  /** Drops the connection to the executor. */
  protected abstract disconnect(): void;
  /** Kills the executor's own process (`this.pid`) from outside. */
  protected abstract killExecutor(): Promise<void>;
  /** Kills the call's processes from outside by their tag (kill.sh); resolves with the survivors. */
  protected abstract killCall(
    tag: string,
    req: ExecRequest,
    shell: CallStarted | undefined,
  ): Promise<string[]>;
  /** The background jobs a command left, where the engine can list them. */
  protected listBackground(): Promise<ExecOutcome["background"]> {
    return Promise.resolve([]);
  }
  /** Whether the connection keeps this process alive (while a call runs), where that can be chosen. */
  protected holdProcess(_hold: boolean): void {}

  /** What the executor wrote to its stdout. */
  protected receive(chunk: Buffer): void {
    this.decoder.push(chunk);
  }

  /** What the executor wrote to its stderr; the end is kept for the reason it failed. */
  protected receiveStderr(chunk: Buffer): void {
    this.stderrText = `${this.stderrText}${chunk.toString("utf8")}`.slice(-2000);
  }

  /** Sends the program to the loader and waits for its hello; undefined when none came within `ms`. */
  protected greet(ms: number): Promise<Hello | undefined> {
    this.send(executorPayload());
    return this.waitHello(ms);
  }

  /** Runs one command; calls wait for the one before to end. */
  run(req: ExecRequest): Promise<ExecOutcome | NotRun> {
    const next = this.queue.then(() => this.runNow(req));
    this.queue = next.catch(() => {});
    return next;
  }

  /**
   * Whether nothing but PID 1, its sleep and the executor itself runs in the container, as the
   * executor sees it (/proc shows every process of the container's pid namespace, and a command can
   * hide none); undefined when it did not answer. Asked at the end of a run, with no command running.
   */
  async census(ms = CENSUS_DEADLINE_MS): Promise<boolean | undefined> {
    if (this.ended) return undefined;
    const answer = new Promise<boolean | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), ms);
      this.censusWaiter = (alone) => {
        clearTimeout(timer);
        resolve(alone);
      };
    });
    this.send(encodeFrame(FRAME.census, NO_NONCE, ""));
    const alone = await answer;
    this.censusWaiter = undefined;
    return alone;
  }

  /** Ends it: the end of its stdin makes it kill what still runs, say bye and exit. */
  async close(waitMs = 3_000): Promise<void> {
    if (this.ended) {
      this.disconnect();
      return;
    }
    // Its bye comes once it has ended what still ran, just before it exits: the engine's closing of
    // the stream comes tens of milliseconds later, and nothing waits on that.
    const bye = new Promise<void>((resolve) => {
      this.byeWaiter = resolve;
    });
    const gone = this.endInput();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([bye, gone, new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
    this.ended = true;
    this.disconnect();
  }

  private async runNow(req: ExecRequest): Promise<ExecOutcome | NotRun> {
    if (this.ended) return { notRun: "executor-gone", why: "the executor had ended" };
    const started = performance.now();
    const nonce = randomBytes(8).toString("hex");
    // Apart from the nonce: the command can read its own environment, and must not learn the nonce.
    const tag = randomBytes(8).toString("hex");
    const call = new ExecutorCall(nonce, req, this.flowTarget());
    this.current = call;
    this.holdProcess(true);
    try {
      const request = {
        command: req.command,
        start: req.startDir,
        workdir: req.workdir,
        env: req.env ?? [],
        tag,
      };
      this.send(encodeFrame(FRAME.run, nonce, JSON.stringify(request)));
      const ack = await call.whenStarted(ACK_DEADLINE_MS);
      if (ack.kind === "failed") return { notRun: "fork-failed", why: ack.why };
      if (ack.kind !== "started") {
        // Dead or stopped before it said it started the command: end it, and anything it may have started.
        await this.giveUp(tag, req, undefined);
        return {
          notRun: "executor-gone",
          why: ack.kind === "lost" ? "the executor ended" : "the executor did not answer",
        };
      }
      return await this.follow(call, req, tag, ack.started, started);
    } finally {
      call.flow.detach();
      this.current = undefined;
      this.holdProcess(false);
    }
  }

  /** From the start frame to the outcome, killing on timeout or cancel. */
  private async follow(
    call: ExecutorCall,
    req: ExecRequest,
    tag: string,
    shell: CallStarted,
    started: number,
  ): Promise<ExecOutcome> {
    let timedOut = false;
    let canceled = false;
    let unanswered: NodeJS.Timeout | undefined;
    let givenUp: Promise<string[] | "failed"> | undefined;
    const disarm = armKill(req.timeoutMs, req.signal, (cause) => {
      if (timedOut || canceled) return;
      if (cause === "timeout") timedOut = true;
      else canceled = true;
      call.flow.drain();
      this.send(encodeFrame(FRAME.kill, call.nonce, JSON.stringify({ grace: req.killGraceSeconds })));
      // A stopped executor never answers: then the kill comes from outside.
      unanswered = setTimeout(
        () => {
          givenUp = this.giveUp(tag, req, shell);
          call.onLost();
        },
        req.killGraceSeconds * 1000 + KILL_ANSWER_SLACK_MS,
      );
    });
    const answer = await call.whenEnded();
    disarm();
    clearTimeout(unanswered);
    let end: CallEnd | undefined;
    let survivors: string[] = [];
    let killFailed = false;
    if (answer.kind === "end") {
      end = answer.end;
      survivors = end.survivors.map(String);
    } else {
      // The executor died or stopped answering while the command ran (the command killed it, with
      // `kill -9 -1` for instance, or the connection dropped): stop what the command left. As on the
      // per-call path when its wrapper is killed, the result is a failure without an exit code; the
      // next call starts a new executor, and the model need not hear of it.
      const left = await (givenUp ?? this.giveUp(tag, req, shell));
      killFailed = left === "failed";
      survivors = left === "failed" ? [] : left;
    }
    const background = end && end.background > 0 ? await this.listBackground() : [];
    return {
      stdout: call.stdout,
      stderr: call.stderr,
      exitCode: end?.code,
      oomKills: end?.oom ?? 0,
      endCwd: end?.cwd ?? undefined,
      timedOut,
      canceled,
      killFailed,
      survivors,
      wrapperLost: end === undefined,
      backgroundCount: end?.background ?? 0,
      background,
      durationMs: Math.round(performance.now() - started),
    };
  }

  /**
   * The executor is dead or not answering: kill its process (if it still has one) and the command's
   * processes from outside, by process group and tag. A child that left both and outlives the kill
   * is what any command can leave on purpose (`nohup … &`): a background job, listed in later
   * results and ended with the run. Resolves with the survivors, or "failed" when the kill itself
   * could not run (the container or pod is gone, or its pid limit is used up).
   */
  private async giveUp(
    tag: string,
    req: ExecRequest,
    shell: CallStarted | undefined,
  ): Promise<string[] | "failed"> {
    const wasAlive = !this.ended;
    this.ended = true;
    this.disconnect();
    try {
      if (wasAlive && this.pid > 1) await this.killExecutor();
      return await this.killCall(tag, req, shell);
    } catch (error) {
      this.log("killing from outside failed: %s", (error as Error).message);
      return "failed";
    }
  }

  private onFrame(frame: Frame): void {
    if (frame.kind === FRAME.hello && frame.nonce === NO_NONCE) {
      const waiter = this.helloWaiter;
      this.helloWaiter = undefined;
      waiter?.(JSON.parse(frame.payload.toString("utf8")) as Hello);
      return;
    }
    if (frame.kind === FRAME.bye && frame.nonce === NO_NONCE) {
      this.byeWaiter?.();
      return;
    }
    if (frame.kind === FRAME.census && frame.nonce === NO_NONCE) {
      this.censusWaiter?.(JSON.parse(frame.payload.toString("utf8")).alone === true);
      return;
    }
    this.current?.onFrame(frame);
  }

  /** The executor's stream ended: what waits on it hears so. */
  protected onEnd(): void {
    if (!this.ended) this.log("executor %d ended: %s", this.pid, this.stderrText.trim().slice(-300));
    this.ended = true;
    this.helloWaiter?.(undefined);
    this.helloWaiter = undefined;
    this.censusWaiter?.(undefined);
    this.current?.onLost();
  }

  private waitHello(ms: number): Promise<Hello | undefined> {
    return new Promise((resolve) => {
      if (this.ended) {
        resolve(undefined);
        return;
      }
      const timer = setTimeout(() => {
        this.helloWaiter = undefined;
        resolve(undefined);
      }, ms);
      this.helloWaiter = (hello) => {
        clearTimeout(timer);
        resolve(hello);
      };
    });
  }
}
