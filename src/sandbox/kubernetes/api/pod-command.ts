/**
 * harness's short helper execs in a pod (the copy in and out, the kill from outside), each under a
 * deadline, with their output collected or streamed. `asUser` wraps a program in run-as.py, since
 * the exec API cannot name a user.
 */
import { PassThrough, type Readable } from "node:stream";
import { programText } from "../../exec/program-text.js";
import { parseUserIds } from "../../sandbox-user.js";
import { openPodExec, type PodExecEnd, type PodTarget } from "./pod-exec.js";

/** How long opening an exec may take before the API server or kubelet counts as not answering. */
export const EXEC_OPEN_DEADLINE_MS = 30_000;

/** `argv` run as `user` ("uid:gid") through run-as.py. */
export function asUser(user: string, argv: readonly string[]): string[] {
  const { uid, gid } = parseUserIds(user);
  const runAs = programText(new URL("./run-as.py", import.meta.url));
  return ["python3", "-I", "-S", "-c", runAs, String(uid), String(gid), ...argv];
}

/** What a helper exec did. */
export interface PodCommandResult extends PodExecEnd {
  stdout: string;
  /** The last 2000 characters of stderr. */
  stderr: string;
}

/**
 * Runs `argv` in the pod, feeding `stdin` (then closing it) when given; resolves with how it ended,
 * rejects when it could not be started or did not end within `deadlineMs`.
 */
export async function runInPod(
  target: PodTarget,
  argv: readonly string[],
  options: { stdin?: Readable; deadlineMs: number },
): Promise<PodCommandResult> {
  const out: Buffer[] = [];
  let err = "";
  const exec = await openPodExec(
    target,
    argv,
    {
      stdout: (chunk) => out.push(chunk),
      stderr: (chunk) => {
        err = `${err}${chunk.toString("utf8")}`.slice(-2000);
      },
    },
    { stdin: options.stdin !== undefined, deadlineMs: Math.min(options.deadlineMs, EXEC_OPEN_DEADLINE_MS) },
  );
  let timer: NodeJS.Timeout | undefined;
  try {
    const feeding = options.stdin ? feed(exec, options.stdin) : Promise.resolve();
    // Past the deadline nobody waits on the feed any more: its failure must not go unhandled.
    feeding.catch(() => {});
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${argv[0]} in the pod ran past ${options.deadlineMs} ms`)),
        options.deadlineMs,
      );
    });
    const [, end] = await Promise.race([Promise.all([feeding, exec.ended]), late]);
    return { ...end, stdout: Buffer.concat(out).toString("utf8"), stderr: err };
  } finally {
    clearTimeout(timer);
    exec.close();
  }
}

/** Copies `source` to the exec's stdin, then closes it; a failed source ends the exec. */
async function feed(exec: Awaited<ReturnType<typeof openPodExec>>, source: Readable): Promise<void> {
  try {
    for await (const chunk of source) await exec.write(chunk as Buffer);
    exec.endInput();
  } catch (error) {
    exec.close();
    throw error;
  }
}

/** A helper exec whose stdout is read as a stream (an archive): paused while the reader lags. */
export interface PodOutputStream {
  stdout: Readable;
  /** How it ended, with its stderr, once the connection closed. */
  ended: Promise<PodExecEnd & { stderr: string }>;
}

export async function streamFromPod(target: PodTarget, argv: readonly string[]): Promise<PodOutputStream> {
  const stdout = new PassThrough({ highWaterMark: 1024 * 1024 });
  let err = "";
  let exec: Awaited<ReturnType<typeof openPodExec>> | undefined;
  exec = await openPodExec(
    target,
    argv,
    {
      stdout: (chunk) => {
        if (!stdout.write(chunk)) exec?.pause();
      },
      stderr: (chunk) => {
        err = `${err}${chunk.toString("utf8")}`.slice(-2000);
      },
    },
    { stdin: false, deadlineMs: EXEC_OPEN_DEADLINE_MS },
  );
  const opened = exec;
  stdout.on("drain", () => opened.resume());
  // A reader that stops early (a limit) lets go of the exec.
  stdout.on("close", () => opened.close());
  const ended = opened.ended.then((end) => {
    stdout.end();
    return { ...end, stderr: err };
  });
  return { stdout, ended };
}
