/**
 * One connection of a published port: the host's client socket on one side, an exec of the
 * forwarder (port-forward.py) in the sandbox on the other, started as the sandbox user. The bytes
 * travel on the exec's attach stream: up as its stdin, down as its stdout (multiplexed, since there
 * is no TTY). Backpressure both ways: a slow reader pauses the other side instead of filling memory.
 */
import type { Socket } from "node:net";
import createDebug from "debug";
import type Docker from "dockerode";
import { Demuxer } from "../exec/demux.js";
import { startExec } from "../exec/exec-start.js";
import { forwardCommand, NO_PYTHON_STATUS, NOTHING_LISTENING_STATUS } from "./forward-command.js";

const log = createDebug("harness:publish");

/** Creating and starting the exec; a wedged engine must not hold the client forever. */
const START_DEADLINE_MS = 15_000;
/** Most of the forwarder's stderr kept for the record. */
const MAX_ERROR_CHARS = 300;

export interface ForwardOutcome {
  bytesUp: number;
  bytesDown: number;
  error?: string;
}

/**
 * Copies `socket` to `port` inside `container` until both sides are done, or `signal` aborts (the
 * sandbox is closing: both ends are cut). Never rejects.
 */
export async function forwardConnection(
  socket: Socket,
  container: Docker.Container,
  user: string,
  port: number,
  signal: AbortSignal,
): Promise<ForwardOutcome> {
  const outcome: ForwardOutcome = { bytesUp: 0, bytesDown: 0 };
  let started: Awaited<ReturnType<typeof startExec>>;
  try {
    started = await startExec(
      container,
      {
        Cmd: forwardCommand(port),
        User: user,
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
      },
      START_DEADLINE_MS,
      "a published port's forwarder",
    );
  } catch (error) {
    socket.destroy();
    return { ...outcome, error: `the forwarder did not start: ${(error as Error).message}` };
  }
  const { exec, stream } = started;
  const cut = () => {
    stream.destroy();
    socket.destroy();
  };
  if (signal.aborted) cut();
  signal.addEventListener("abort", cut, { once: true });
  let stderr = "";
  const demuxer = new Demuxer((name, payload) => {
    if (name === "stderr") {
      stderr = (stderr + payload.toString("utf8")).slice(0, MAX_ERROR_CHARS);
      return;
    }
    outcome.bytesDown += payload.length;
    if (!socket.destroyed && !socket.write(payload)) {
      stream.pause();
      socket.once("drain", () => stream.resume());
    }
  });
  const streamDone = new Promise<void>((resolve) => {
    stream.on("data", (chunk: Buffer) => demuxer.push(chunk));
    stream.once("end", resolve);
    stream.once("close", resolve);
    stream.once("error", () => resolve());
  });
  const socketDone = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.on("data", (chunk: Buffer) => {
    outcome.bytesUp += chunk.length;
    if (!stream.write(chunk)) {
      socket.pause();
      stream.once("drain", () => socket.resume());
    }
  });
  // The client's half-close becomes the forwarder's end of stdin (it passes it on as one).
  socket.once("end", () => stream.end());
  // A client gone for good: the forwarder sees its stdin end and winds down on its own.
  socket.once("error", () => stream.destroy());
  socket.once("close", () => stream.end());
  socket.resume();

  await streamDone;
  socket.end();
  const status = await exec.inspect().then(
    (info) => info.ExitCode,
    () => null,
  );
  if (status === NOTHING_LISTENING_STATUS || status === NO_PYTHON_STATUS) {
    outcome.error = stderr.trim() || `the forwarder exited with ${status}`;
    socket.destroy();
  }
  await socketDone;
  signal.removeEventListener("abort", cut);
  log("port %d: %d bytes up, %d down, exit %s", port, outcome.bytesUp, outcome.bytesDown, status);
  return outcome;
}
