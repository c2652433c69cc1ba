/**
 * The executor (docker/executor/executor.py, the same program and frames as on Docker) in a pod: one
 * exec over the API server's WebSocket starts it as the container's user (the machinery: root with
 * only SETUID and SETGID), each command is a frame on that exec's stdin, and its frames come back on
 * the exec's stdout. The guarantees are the executor's own: the call's end is its shell being
 * reaped and comes with the call's nonce (no command output can forge it), a kill walks the
 * command's process tree, output is kept head and tail. What the Docker host side does through the
 * engine it does here through more execs: a dead executor's command is killed by kill.sh, run as the
 * sandbox user through run-as.py (the exec API cannot name a user).
 */
import { randomBytes } from "node:crypto";
import type { Readable } from "node:stream";
import createDebug from "debug";
import { armKill } from "../docker/exec/exec-kill.js";
import { EXEC_TAG_VAR, killCommand } from "../docker/exec/exec-scripts.js";
import { type CallEnd, type CallStarted, ExecutorCall } from "../docker/executor/executor-call.js";
import { encodeFrame, type Frame, FrameDecoder } from "../docker/executor/executor-frames.js";
import {
  EXECUTOR_LOADER,
  EXECUTOR_NAME,
  executorSource,
  FRAME,
  NO_NONCE,
} from "../docker/executor/executor-protocol.js";
import type { ExecOutcome, ExecRequest } from "../docker/per-call/docker-exec.js";
import { asUser, runInPod } from "./api/pod-command.js";
import { openPodExec, type PodExec, type PodTarget } from "./api/pod-exec.js";

const log = createDebug("harness:kubernetes");

/** python3 starts in ~30 ms; the API server, kubelet and runtime add their hops on a loaded node. */
const START_DEADLINE_MS = 30_000;
const ACK_DEADLINE_MS = 10_000;
const KILL_ANSWER_SLACK_MS = 10_000;

interface Hello {
  pid: number;
  protected: boolean;
  shell: string;
  root?: boolean;
  landlock?: boolean;
}

/** Why a call did not run: the command never started, so it may be retried. */
export type NotRun = { notRun: "fork-failed" | "executor-gone"; why: string };

export class PodExecutor {
  private readonly decoder: FrameDecoder;
  private exec: PodExec | undefined;
  private current: ExecutorCall | undefined;
  private ended = false;
  private queue: Promise<unknown> = Promise.resolve();
  private helloWaiter: ((hello: Hello | undefined) => void) | undefined;
  private byeWaiter: (() => void) | undefined;
  private stderrText = "";
  /** Its pid in the container, from its hello. */
  pid = 0;
  isolation = { root: false, landlock: false };

  private constructor(
    private readonly target: PodTarget,
    /** "uid:gid" of the commands. */
    private readonly user: string,
  ) {
    this.decoder = new FrameDecoder((frame) => this.onFrame(frame));
  }

  get alive(): boolean {
    return !this.ended;
  }

  /**
   * Starts the executor in the pod; rejects when it cannot (no python3, no ctypes, or an executor
   * that did not keep root out of the commands' reach).
   */
  static async start(target: PodTarget, user: string, deadlineMs = START_DEADLINE_MS): Promise<PodExecutor> {
    const executor = new PodExecutor(target, user);
    const exec = await openPodExec(
      target,
      ["python3", "-I", "-S", "-c", EXECUTOR_LOADER, EXECUTOR_NAME, user, EXEC_TAG_VAR],
      {
        stdout: (chunk) => executor.decoder.push(chunk),
        stderr: (chunk) => {
          executor.stderrText = `${executor.stderrText}${chunk.toString("utf8")}`.slice(-2000);
        },
      },
      { stdin: true, deadlineMs },
    );
    executor.exec = exec;
    exec.ended.then(() => executor.onEnd());
    const script = Buffer.from(executorSource(), "utf8");
    executor.send(Buffer.concat([Buffer.from(String(script.length).padStart(10, "0")), script]));
    const hello = await executor.waitHello(deadlineMs);
    if (hello?.protected === true && hello.root === true) {
      executor.pid = hello.pid;
      executor.isolation = { root: true, landlock: hello.landlock === true };
      log("executor %d started in %s (%o)", hello.pid, target.pod, executor.isolation);
      return executor;
    }
    executor.ended = true;
    exec.close();
    if (hello?.protected === true) throw new Error("the executor could not drop to the sandbox user's uid");
    if (hello) throw new Error("python3 in this image cannot make a process non-dumpable (no ctypes)");
    throw new Error(
      `the executor did not start (the image needs python3): ${executor.stderrText.trim().slice(-300) || "no answer"}`,
    );
  }

  run(req: ExecRequest): Promise<ExecOutcome | NotRun> {
    const next = this.queue.then(() => this.runNow(req));
    this.queue = next.catch(() => {});
    return next;
  }

  /** Ends it: the end of its stdin makes it kill what still runs, say bye and exit. */
  async close(waitMs = 3_000): Promise<void> {
    const exec = this.exec;
    if (this.ended || !exec) {
      exec?.close();
      return;
    }
    const gone = new Promise<void>((resolve) => {
      this.byeWaiter = resolve;
      exec.ended.then(() => resolve());
    });
    exec.endInput();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([gone, new Promise<void>((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
    this.ended = true;
    exec.close();
  }

  private send(bytes: Buffer): void {
    this.exec
      ?.write(bytes)
      .catch((error: unknown) => log("writing to the executor failed: %s", (error as Error).message));
  }

  private async runNow(req: ExecRequest): Promise<ExecOutcome | NotRun> {
    const exec = this.exec;
    if (this.ended || !exec) return { notRun: "executor-gone", why: "the executor had ended" };
    const started = performance.now();
    const nonce = randomBytes(8).toString("hex");
    const tag = randomBytes(8).toString("hex");
    // The pause reaches the WebSocket: the executor's output waits in the kernel's buffers.
    const flow = { pause: () => exec.pause(), resume: () => exec.resume() } as unknown as Readable;
    const call = new ExecutorCall(nonce, req, flow);
    this.current = call;
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
    }
  }

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
      const left = await (givenUp ?? this.giveUp(tag, req, shell));
      killFailed = left === "failed";
      survivors = left === "failed" ? [] : left;
    }
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
      // No `docker top` here: the count is the executor's, the list would need another exec.
      background: [],
      durationMs: Math.round(performance.now() - started),
    };
  }

  /**
   * The executor is dead or silent: kill it (as the machinery, its real uid) and the command's
   * processes (kill.sh as the sandbox user) from fresh execs. "failed" when those could not run
   * (the pod is gone or its pid limit is used up).
   */
  private async giveUp(
    tag: string,
    req: ExecRequest,
    shell: CallStarted | undefined,
  ): Promise<string[] | "failed"> {
    const wasAlive = !this.ended;
    this.ended = true;
    this.exec?.close();
    try {
      if (wasAlive && this.pid > 1) {
        await runInPod(this.target, ["/bin/sh", "-c", `kill -KILL ${this.pid} 2>/dev/null; true`], {
          deadlineMs: 15_000,
        });
      }
      const kill = killCommand(tag, req.killGraceSeconds, shell ? String(shell.pid) : "", "");
      const result = await runInPod(this.target, asUser(this.user, kill), {
        deadlineMs: req.killGraceSeconds * 1000 + 15_000,
      });
      if (result.exitCode !== 0) throw new Error(result.error ?? `kill.sh exited with ${result.exitCode}`);
      const left = /left:(.*)/.exec(result.stdout)?.[1]?.trim() ?? "";
      return left ? left.split(/\s+/) : [];
    } catch (error) {
      log("killing from outside failed: %s", (error as Error).message);
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
    this.current?.onFrame(frame);
  }

  private onEnd(): void {
    if (!this.ended) log("executor %d ended: %s", this.pid, this.stderrText.trim().slice(-300));
    this.ended = true;
    this.helloWaiter?.(undefined);
    this.helloWaiter = undefined;
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
