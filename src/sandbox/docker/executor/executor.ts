/**
 * The host's side of the executor on Docker (../../executor/executor-host.ts does the frames): one exec starts it, each command is a frame
 * on its stdin, and its frames come back on the exec's attach stream. Calls run one at a time.
 *
 * Where the machinery runs as root (container-spec.ts), no command can signal, trace or open the
 * executor. Where it shares the commands' uid (Podman), a command can kill or stop it (not read or
 * write its pipes: it is non-dumpable). A dead executor is seen as the end of its stream; a stopped
 * one as silence where an answer is due (the start of a call, or the end of a kill). Either way the
 * command's processes are killed from outside by their tag, the executor is ended, and the call gets
 * an honest result; the next call starts a new executor.
 */
import type { Duplex, Readable } from "node:stream";
import createDebug from "debug";
import type Docker from "dockerode";
import { EXEC_TAG_VAR } from "../../exec/exec-scripts.js";
import type { ExecOutcome, ExecRequest } from "../../exec/exec-types.js";
import type { CallStarted } from "../../executor/executor-call.js";
import { ExecutorHost } from "../../executor/executor-host.js";
import { EXECUTOR_LOADER, EXECUTOR_NAME } from "../../executor/executor-protocol.js";
import { listBackgroundProcesses } from "../exec/background-processes.js";
import { Demuxer } from "../exec/demux.js";
import { runSimpleExec } from "../exec/exec-helper.js";
import { runKillScript } from "../exec/exec-kill.js";
import { startExec } from "../exec/exec-start.js";

export type { NotRun } from "../../executor/executor-host.js";

const log = createDebug("harness:executor");

/** python3 starts in ~30 ms; a loaded host or a slow engine is given far more. */
const START_DEADLINE_MS = 15_000;

/** This image cannot host a protected executor (no python3, or python3 without ctypes). */
export class ExecutorUnavailable extends Error {}

export class Executor extends ExecutorHost {
  private constructor(
    private readonly container: Docker.Container,
    private readonly user: string,
    /** Who the executor itself runs as: MACHINERY_USER, or the sandbox user (container-spec.ts). */
    private readonly machineryUser: string,
    private readonly stream: Duplex,
  ) {
    super(log);
    const demuxer = new Demuxer((name, payload) => {
      if (name === "stdout") this.receive(payload);
      else this.receiveStderr(payload);
    });
    stream.on("data", (chunk: Buffer) => demuxer.push(chunk));
    const onEnd = () => this.onEnd();
    stream.once("end", onEnd);
    stream.once("close", onEnd);
    stream.once("error", onEnd);
  }

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
    const hello = await executor.greet(deadlineMs);
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

  protected override send(bytes: Buffer): void {
    this.stream.write(bytes);
  }

  protected override flowTarget(): Readable {
    return this.stream;
  }

  protected override endInput(): Promise<void> {
    const gone = new Promise<void>((resolve) => {
      this.stream.once("close", resolve);
      this.stream.once("end", resolve);
    });
    this.stream.end();
    return gone;
  }

  protected override disconnect(): void {
    this.stream.destroy();
  }

  protected override async killExecutor(): Promise<void> {
    await runSimpleExec(
      this.container,
      ["/bin/sh", "-c", `kill -KILL ${this.pid} 2>/dev/null; true`],
      this.machineryUser,
    );
  }

  /** KILL_SCRIPT from a fresh exec; rejects when that exec could not run (the container needs a restart). */
  protected override killCall(
    tag: string,
    req: ExecRequest,
    shell: CallStarted | undefined,
  ): Promise<string[]> {
    return runKillScript(this.container, this.user, {
      tag,
      graceSeconds: req.killGraceSeconds,
      pid: shell ? String(shell.pid) : "",
      // No start time: "everything younger than the command" would take PID 1's new sleep after
      // `kill -9 -1`, and another harness process's command.
      startTime: "",
    });
  }

  protected override listBackground(): Promise<ExecOutcome["background"]> {
    return listBackgroundProcesses(this.container);
  }

  /**
   * Whether the executor's connection keeps this process alive: only while a call runs. An idle
   * executor must not stop a program that is done (and forgot `stop()`) from exiting; its stdin then
   * closes with the process, and the executor exits too.
   */
  protected override holdProcess(hold: boolean): void {
    const socket = this.stream as Duplex & { ref?: () => void; unref?: () => void };
    if (hold) socket.ref?.();
    else socket.unref?.();
  }
}

/** Whether the image has python3 on the PATH; undefined when even asking failed. */
export async function hasPython(container: Docker.Container, user: string): Promise<boolean | undefined> {
  return runSimpleExec(
    container,
    ["/bin/sh", "-c", "command -v python3 >/dev/null && echo yes || echo no"],
    user,
  ).then(
    (out) => out.trim() === "yes",
    () => undefined,
  );
}
