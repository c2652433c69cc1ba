/**
 * The executor (executor/executor.py, the same program, frames and host side, executor-host.ts, as on Docker) in a pod: one
 * exec over the API server's WebSocket starts it as the container's user (the machinery: root with
 * only SETUID and SETGID), each command is a frame on that exec's stdin, and its frames come back on
 * the exec's stdout. The guarantees are the executor's own: the call's end is its shell being
 * reaped and comes with the call's nonce (no command output can forge it), a kill walks the
 * command's process tree, output is kept head and tail. What the Docker host side does through the
 * engine it does here through more execs: a dead executor's command is killed by kill.sh, run as the
 * sandbox user through run-as.py (the exec API cannot name a user).
 */
import type { Readable } from "node:stream";
import createDebug from "debug";
import { EXEC_TAG_VAR, killCommand } from "../exec/exec-scripts.js";
import type { ExecRequest } from "../exec/exec-types.js";
import type { CallStarted } from "../executor/executor-call.js";
import { ExecutorHost } from "../executor/executor-host.js";
import { EXECUTOR_LOADER, EXECUTOR_NAME } from "../executor/executor-protocol.js";
import { asUser, runInPod } from "./api/pod-command.js";
import { openPodExec, type PodExec, type PodTarget } from "./api/pod-exec.js";

export type { NotRun } from "../executor/executor-host.js";

const log = createDebug("harness:kubernetes");

/** python3 starts in ~30 ms; the API server, kubelet and runtime add their hops on a loaded node. */
const START_DEADLINE_MS = 30_000;

export class PodExecutor extends ExecutorHost {
  private exec: PodExec | undefined;

  private constructor(
    private readonly target: PodTarget,
    /** "uid:gid" of the commands. */
    private readonly user: string,
  ) {
    super(log);
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
        stdout: (chunk) => executor.receive(chunk),
        stderr: (chunk) => executor.receiveStderr(chunk),
      },
      { stdin: true, deadlineMs },
    );
    executor.exec = exec;
    exec.ended.then(() => executor.onEnd());
    const hello = await executor.greet(deadlineMs);
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

  protected override send(bytes: Buffer): void {
    this.exec
      ?.write(bytes)
      .catch((error: unknown) => log("writing to the executor failed: %s", (error as Error).message));
  }

  /** The pause reaches the WebSocket: the executor's output waits in the kernel's buffers. */
  protected override flowTarget(): Pick<Readable, "pause" | "resume"> {
    const exec = this.exec;
    return { pause: () => exec?.pause(), resume: () => exec?.resume() } as unknown as Readable;
  }

  protected override endInput(): Promise<void> {
    const exec = this.exec;
    if (!exec) return Promise.resolve();
    exec.endInput();
    return exec.ended.then(() => {});
  }

  protected override disconnect(): void {
    this.exec?.close();
  }

  /** As the machinery (its real uid), from a fresh exec. */
  protected override async killExecutor(): Promise<void> {
    await runInPod(this.target, ["/bin/sh", "-c", `kill -KILL ${this.pid} 2>/dev/null; true`], {
      deadlineMs: 15_000,
    });
  }

  /**
   * kill.sh as the sandbox user through run-as.py (the exec API cannot name a user); rejects when it
   * could not run (the pod is gone or its pid limit is used up).
   */
  protected override async killCall(
    tag: string,
    req: ExecRequest,
    shell: CallStarted | undefined,
  ): Promise<string[]> {
    const kill = killCommand(tag, req.killGraceSeconds, shell ? String(shell.pid) : "", "");
    const result = await runInPod(this.target, asUser(this.user, kill), {
      deadlineMs: req.killGraceSeconds * 1000 + 15_000,
    });
    if (result.exitCode !== 0) throw new Error(result.error ?? `kill.sh exited with ${result.exitCode}`);
    const left = /left:(.*)/.exec(result.stdout)?.[1]?.trim() ?? "";
    return left ? left.split(/\s+/) : [];
  }
}
