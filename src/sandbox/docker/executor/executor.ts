/**
 * The host's side of the executor (executor-script.ts): one exec starts it, each command is a frame
 * on its stdin, and its frames come back on the exec's attach stream. Calls run one at a time.
 *
 * Where the machinery runs as root (container-spec.ts), no command can signal, trace or open the
 * executor. Where it shares the commands' uid (Podman), a command can kill or stop it (not read or
 * write its pipes: it is non-dumpable). A dead executor is seen as the end of its stream; a stopped
 * one as silence where an answer is due (the start of a call, or the end of a kill). Either way the
 * command's processes are killed from outside by their tag, the executor is ended, and the call gets
 * an honest result; the next call starts a new executor.
 */
import { randomBytes } from "node:crypto";
import type { Duplex } from "node:stream";
import createDebug from "debug";
import type Docker from "dockerode";
import { listBackgroundProcesses } from "../exec/background-processes.js";
import { Demuxer } from "../exec/demux.js";
import { runSimpleExec } from "../exec/exec-helper.js";
import { armKill, runKillScript } from "../exec/exec-kill.js";
import { EXEC_TAG_VAR } from "../exec/exec-scripts.js";
import { startExec } from "../exec/exec-start.js";
import type { ExecOutcome, ExecRequest } from "../per-call/docker-exec.js";
import { type CallEnd, type CallStarted, ExecutorCall } from "./executor-call.js";
import { encodeFrame, type Frame, FrameDecoder } from "./executor-frames.js";
import { EXECUTOR_LOADER, EXECUTOR_NAME, executorSource, FRAME, NO_NONCE } from "./executor-protocol.js";

const log = createDebug("harness:executor");

/** python3 starts in ~30 ms; a loaded host or a slow engine is given far more. */
const START_DEADLINE_MS = 15_000;
/** How long the executor may take to say a command started before it counts as stopped or wedged. */
const ACK_DEADLINE_MS = 10_000;
/** Beyond the kill's grace, how long the executor may take to report the end of a killed command. */
const KILL_ANSWER_SLACK_MS = 10_000;
/** The census reads /proc once (about a millisecond); any doubt falls back to asking the engine. */
const CENSUS_DEADLINE_MS = 2_000;

/** The executor's first frame. */
interface Hello {
  pid: number;
  /** It made itself non-dumpable. */
  protected: boolean;
  shell: string;
  /** It keeps real and saved uid 0 and acts as the commands' uid (started as root). */
  root?: boolean;
  /** Each command gets a Landlock domain of its own (the kernel has Landlock). */
  landlock?: boolean;
}

/** This image cannot host a protected executor (no python3, or python3 without ctypes). */
export class ExecutorUnavailable extends Error {}

/** Why a call on the executor did not give an outcome: the command never ran, so it may be retried. */
export type NotRun = { notRun: "fork-failed" | "executor-gone"; why: string };

export class Executor {
  private readonly decoder: FrameDecoder;
  private current: ExecutorCall | undefined;
  private ended = false;
  private queue: Promise<unknown> = Promise.resolve();
  private helloWaiter: ((hello: Hello | undefined) => void) | undefined;
  private censusWaiter: ((alone: boolean | undefined) => void) | undefined;
  private byeWaiter: (() => void) | undefined;
  private stderrText = "";

  private constructor(
    private readonly container: Docker.Container,
    private readonly user: string,
    /** Who the executor itself runs as: MACHINERY_USER, or the sandbox user (container-spec.ts). */
    private readonly machineryUser: string,
    private readonly stream: Duplex,
  ) {
    this.decoder = new FrameDecoder((frame) => this.onFrame(frame));
    const demuxer = new Demuxer((name, payload) => {
      if (name === "stdout") this.decoder.push(payload);
      else this.stderrText = `${this.stderrText}${payload.toString("utf8")}`.slice(-2000);
    });
    stream.on("data", (chunk: Buffer) => demuxer.push(chunk));
    const onEnd = () => this.onEnd();
    stream.once("end", onEnd);
    stream.once("close", onEnd);
    stream.once("error", onEnd);
  }

  /** Its pid in the container, from its hello. */
  pid = 0;

  /** False once its stream ended (it exited or was killed) or it was given up on. */
  get alive(): boolean {
    return !this.ended;
  }

  /** Whether it runs as root with the commands' uid as its effective uid, and gives each call a Landlock domain. */
  isolation = { root: false, landlock: false };

  /**
   * Starts an executor as `machineryUser` that runs commands as `user`. Rejects with
   * ExecutorUnavailable when the image cannot host a protected one, and with another error when it
   * could not be started this time.
   */
  static async start(
    container: Docker.Container,
    user: string,
    machineryUser: string = user,
    deadlineMs = START_DEADLINE_MS,
  ): Promise<Executor> {
    const { stream } = await startExec(
      container,
      {
        // -I: no PYTHON* variables, no user site, no script directory on the path; -S: no site module.
        Cmd: ["python3", "-I", "-S", "-c", EXECUTOR_LOADER, EXECUTOR_NAME, user, EXEC_TAG_VAR],
        User: machineryUser,
        WorkingDir: "/",
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
      },
      deadlineMs,
      "the executor",
    );
    // A frame is small and waits for an answer: over tcp:// Nagle's algorithm would hold it back.
    (stream as Duplex & { setNoDelay?: (noDelay: boolean) => void }).setNoDelay?.(true);
    const executor = new Executor(container, user, machineryUser, stream);
    const script = Buffer.from(executorSource(), "utf8");
    stream.write(Buffer.concat([Buffer.from(String(script.length).padStart(10, "0")), script]));
    const hello = await executor.waitHello(deadlineMs);
    // Started as root, it must have kept root out of the commands' reach; anything else is refused.
    const rootAsAsked = machineryUser === user || hello?.root === true;
    if (hello?.protected === true && rootAsAsked) {
      executor.pid = hello.pid;
      executor.isolation = { root: hello.root === true, landlock: hello.landlock === true };
      executor.holdProcess(false);
      log("executor %d started (%s, %o)", hello.pid, hello.shell, executor.isolation);
      return executor;
    }
    stream.destroy();
    executor.ended = true;
    if (hello?.protected === true)
      throw new Error("the executor started as root but could not drop to the sandbox user's uid");
    if (hello)
      throw new ExecutorUnavailable("python3 in this image cannot make a process non-dumpable (no ctypes)");
    // The engine says nothing useful when the program is missing (the stream just ends): ask.
    if ((await hasPython(container, user)) === false)
      throw new ExecutorUnavailable("the image has no python3");
    throw new Error(`the executor did not start: ${executor.stderrText.trim().slice(-300) || "no answer"}`);
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
    this.stream.write(encodeFrame(FRAME.census, NO_NONCE, ""));
    const alone = await answer;
    this.censusWaiter = undefined;
    return alone;
  }

  /** Ends it: closing its stdin makes it kill what still runs and exit. */
  async close(waitMs = 3_000): Promise<void> {
    if (this.ended) {
      this.stream.destroy();
      return;
    }
    // Its bye comes once it has ended what still ran, just before it exits: the engine's closing of
    // the stream comes tens of milliseconds later, and nothing waits on that.
    const gone = new Promise<void>((resolve) => {
      this.byeWaiter = resolve;
      this.stream.once("close", resolve);
      this.stream.once("end", resolve);
    });
    this.stream.end();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([gone, new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
    this.ended = true;
    this.stream.destroy();
  }

  private async runNow(req: ExecRequest): Promise<ExecOutcome | NotRun> {
    if (this.ended) return { notRun: "executor-gone", why: "the executor had ended" };
    const started = performance.now();
    const nonce = randomBytes(8).toString("hex");
    // Apart from the nonce: the command can read its own environment, and must not learn the nonce.
    const tag = randomBytes(8).toString("hex");
    const call = new ExecutorCall(nonce, req, this.stream);
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
      this.stream.write(encodeFrame(FRAME.run, nonce, JSON.stringify(request)));
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
      this.stream.write(encodeFrame(FRAME.kill, call.nonce, JSON.stringify({ grace: req.killGraceSeconds })));
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
    const background = end && end.background > 0 ? await listBackgroundProcesses(this.container) : [];
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
   * processes (KILL_SCRIPT) from a fresh exec, by process group and tag. A child that left both and
   * outlives the kill is what any command can leave on purpose (`nohup … &`): a background job,
   * listed in later results and ended with the run. Resolves with the survivors, or "failed" when
   * the kill exec itself could not run (the container needs a restart).
   */
  private async giveUp(
    tag: string,
    req: ExecRequest,
    shell: CallStarted | undefined,
  ): Promise<string[] | "failed"> {
    const wasAlive = !this.ended;
    this.ended = true;
    this.stream.destroy();
    try {
      if (wasAlive && this.pid > 1) {
        await runSimpleExec(
          this.container,
          ["/bin/sh", "-c", `kill -KILL ${this.pid} 2>/dev/null; true`],
          this.machineryUser,
        );
      }
      return await runKillScript(this.container, this.user, {
        tag,
        graceSeconds: req.killGraceSeconds,
        pid: shell ? String(shell.pid) : "",
        // No start time: "everything younger than the command" would take PID 1's new sleep after
        // `kill -9 -1`, and another harness process's command.
        startTime: "",
      });
    } catch (error) {
      log("killing from outside failed: %s", (error as Error).message);
      return "failed";
    }
  }

  /**
   * Whether the executor's connection keeps this process alive: only while a call runs. An idle
   * executor must not stop a program that is done (and forgot `stop()`) from exiting; its stdin then
   * closes with the process, and the executor exits too.
   */
  private holdProcess(hold: boolean): void {
    const socket = this.stream as Duplex & { ref?: () => void; unref?: () => void };
    if (hold) socket.ref?.();
    else socket.unref?.();
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

  private onEnd(): void {
    if (!this.ended) log("executor %d ended: %s", this.pid, this.stderrText.trim().slice(-300));
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

/** Whether the image has python3 on the PATH; undefined when even asking failed. */
async function hasPython(container: Docker.Container, user: string): Promise<boolean | undefined> {
  return runSimpleExec(
    container,
    ["/bin/sh", "-c", "command -v python3 >/dev/null && echo yes || echo no"],
    user,
  ).then(
    (out) => out.trim() === "yes",
    () => undefined,
  );
}
