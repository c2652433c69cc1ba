/**
 * One exec in a pod over the API server's WebSocket (`pods/exec`, channel protocol v5): stdin as
 * channel 0 (v5 can close it on its own, which is how a process reading stdin gets end of file),
 * stdout 1 and stderr 2 kept apart, and the process's end as the status on channel 3. The exec API
 * has no user, working directory or environment of its own: every exec runs as the container's user
 * (the machinery's, pod-spec.ts) in the container's environment.
 */
import { PassThrough, Writable } from "node:stream";
import { Exec, type KubeConfig } from "@kubernetes/client-node";
import { SandboxError } from "../../../errors.js";

/** The pod and container an exec runs in. */
export interface PodTarget {
  kc: KubeConfig;
  namespace: string;
  pod: string;
  container: string;
}

/** How an exec ended, from its status channel; `exitCode` undefined when the status said none. */
export interface PodExecEnd {
  exitCode: number | undefined;
  /** The status's message when it was not a plain exit (the pod went away, the runtime failed…). */
  error?: string | undefined;
}

/** The part of the `ws` WebSocket this file uses (client-node hands it over untyped). */
interface Socket {
  protocol: string;
  readyState: number;
  bufferedAmount: number;
  close(): void;
  terminate?(): void;
  pause(): void;
  resume(): void;
  on(event: "close", listener: () => void): void;
  on(event: "error", listener: (error: Error) => void): void;
}

/** A running exec. */
export interface PodExec {
  /** Sends bytes to the process's stdin; resolves once the connection's send buffer is low again. */
  write(chunk: Buffer): Promise<void>;
  /** Closes the process's stdin (end of file), leaving its output flowing. */
  endInput(): void;
  /** Stops reading the process's output (backpressure: its pipe fills and it blocks), and goes on. */
  pause(): void;
  resume(): void;
  /** Drops the connection: the runtime closes the process's stdin and output. */
  close(): void;
  /** Settles when the connection is closed: how the process ended, if the status came. */
  readonly ended: Promise<PodExecEnd>;
}

const OPEN = 1;
/** Bytes queued on the connection before `write` waits: bounds what an upload holds in memory. */
const SEND_HIGH_WATER = 4 * 1024 * 1024;

/** Opens an exec of `command` in `target`; rejects when the API server refuses or does not answer. */
export async function openPodExec(
  target: PodTarget,
  command: readonly string[],
  output: { stdout: (chunk: Buffer) => void; stderr: (chunk: Buffer) => void },
  options: { stdin: boolean; deadlineMs: number },
): Promise<PodExec> {
  let status: PodExecEnd | undefined;
  const sink = (deliver: (chunk: Buffer) => void) =>
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        deliver(chunk);
        done();
      },
    });
  // client-node sends each chunk of this stream as channel 0, and its end as v5's close of stdin.
  const stdin = options.stdin ? new PassThrough() : null;
  const connecting = new Exec(target.kc).exec(
    target.namespace,
    target.pod,
    target.container,
    [...command],
    sink(output.stdout),
    sink(output.stderr),
    stdin,
    false,
    (s) => {
      status = statusEnd(Buffer.from(JSON.stringify(s)));
    },
  ) as Promise<unknown>;
  const socket = (await withDeadline(
    connecting.catch((error: unknown) => {
      throw execRefusal(error, target);
    }),
    options.deadlineMs,
    "opening an exec in the pod",
  )) as Socket;
  if (options.stdin && socket.protocol !== "v5.channel.k8s.io") {
    socket.close();
    throw new Error(
      `the API server speaks ${socket.protocol || "an old exec protocol"}, not v5.channel.k8s.io (Kubernetes 1.30 and later): harness needs it to close a command's stdin`,
    );
  }
  const ended = new Promise<PodExecEnd>((resolve) => {
    let error: string | undefined;
    socket.on("error", (e) => {
      error = e.message;
    });
    socket.on("close", () =>
      resolve(
        status ?? { exitCode: undefined, error: error ?? "the exec's connection closed without a status" },
      ),
    );
  });
  return {
    write: async (chunk) => {
      if (socket.readyState !== OPEN || !stdin) throw new Error("the exec's connection is closed");
      stdin.write(chunk);
      while (socket.bufferedAmount > SEND_HIGH_WATER && socket.readyState === OPEN) {
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    },
    endInput: () => {
      if (socket.readyState === OPEN) stdin?.end();
    },
    pause: () => socket.pause(),
    resume: () => socket.resume(),
    close: () => (socket.terminate ? socket.terminate() : socket.close()),
    ended,
  };
}

/**
 * Why an exec could not be opened, as an Error that says it. client-node rejects with the WebSocket's
 * error event, not an Error (it printed as "[object Object]"); the API server's refusal comes as the
 * upgrade's HTTP status ("Unexpected server response: 403"), its body unread, so a 403 is named for
 * what it almost always is: RBAC without create on pods/exec.
 */
export function execRefusal(error: unknown, target: Pick<PodTarget, "namespace" | "pod">): Error {
  const event = error as { message?: unknown; error?: unknown } | undefined;
  const cause = error instanceof Error ? error : event?.error instanceof Error ? event.error : undefined;
  const message =
    typeof event?.message === "string" && event.message !== ""
      ? event.message
      : (cause?.message ?? String(error));
  const where = `pod ${target.pod} in namespace ${target.namespace}`;
  if (/\b403\b/.test(message)) {
    return new SandboxError(
      `the API server refused an exec into ${where} (HTTP 403): the kubeconfig's user may not create pods/exec there: bind it a Role with create on pods/exec (harness doctor --engine kubernetes checks)`,
      { cause: error },
    );
  }
  return new SandboxError(`opening an exec into ${where} failed: ${message}`, { cause: error });
}

/**
 * The status channel's JSON (a `metav1.Status`): Success is exit 0; a NonZeroExitCode carries the
 * code as the ExitCode cause; anything else (the container gone, an exec the runtime refused) has no
 * exit code, only its message.
 */
export function statusEnd(data: Buffer): PodExecEnd {
  let status: {
    status?: string;
    reason?: string;
    message?: string;
    details?: { causes?: { reason?: string; message?: string }[] };
  };
  try {
    status = JSON.parse(data.toString("utf8"));
  } catch {
    return {
      exitCode: undefined,
      error: `an unreadable exec status: ${data.toString("utf8").slice(0, 200)}`,
    };
  }
  if (status.status === "Success") return { exitCode: 0 };
  const code = status.details?.causes?.find((c) => c.reason === "ExitCode")?.message;
  if (status.reason === "NonZeroExitCode" && code !== undefined && /^\d+$/.test(code)) {
    return { exitCode: Number(code) };
  }
  return { exitCode: undefined, error: status.message ?? status.reason ?? "the exec failed" };
}

/** Rejects when `promise` has not settled after `ms` (a late connection is closed when it comes). */
export async function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } catch (error) {
    promise.then(
      (late) => (late as Partial<Socket> | undefined)?.close?.(),
      () => {},
    );
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
