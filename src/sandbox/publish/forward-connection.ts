/**
 * One connection of a published port: the host's client socket on one side, one exec of the
 * forwarder (port-forward.py) in the sandbox on the other, opened by the engine (`OpenForwarder`).
 * The bytes travel up as the exec's stdin and down as its stdout. Backpressure both ways: a slow
 * reader pauses the other side instead of filling memory.
 */
import type { Socket } from "node:net";
import createDebug from "debug";
import { NO_PYTHON_STATUS, NOTHING_LISTENING_STATUS } from "./forward-command.js";
import type { ForwarderExec, OpenForwarder } from "./forwarder-exec.js";

const log = createDebug("harness:publish");

/** Most of the forwarder's stderr kept for the record. */
const MAX_ERROR_CHARS = 300;

export interface ForwardOutcome {
  bytesUp: number;
  bytesDown: number;
  error?: string;
}

/**
 * Copies `socket` to `port` inside the sandbox until both sides are done, or `signal` aborts (the
 * sandbox is closing: both ends are cut). Never rejects.
 */
export async function forwardConnection(
  socket: Socket,
  open: OpenForwarder,
  port: number,
  signal: AbortSignal,
): Promise<ForwardOutcome> {
  const outcome: ForwardOutcome = { bytesUp: 0, bytesDown: 0 };
  // From the start: the sandbox may close (and this socket with it) while the forwarder is opening.
  const socketDone = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  let stderr = "";
  let forwarder: ForwarderExec | undefined;
  let waitingForClient = false;
  try {
    forwarder = await open(port, {
      stdout: (chunk) => {
        outcome.bytesDown += chunk.length;
        if (socket.destroyed || socket.write(chunk) || waitingForClient) return;
        waitingForClient = true;
        forwarder?.pause();
        socket.once("drain", () => {
          waitingForClient = false;
          forwarder?.resume();
        });
      },
      stderr: (chunk) => {
        stderr = (stderr + chunk.toString("utf8")).slice(0, MAX_ERROR_CHARS);
      },
    });
  } catch (error) {
    socket.resetAndDestroy();
    return { ...outcome, error: `the forwarder did not start: ${(error as Error).message}` };
  }
  const opened = forwarder;
  // Whether harness dropped the exec itself (then a missing exit status says nothing).
  let droppedHere = false;
  const drop = () => {
    droppedHere = true;
    opened.close();
  };
  const cut = () => {
    drop();
    socket.destroy();
  };
  if (signal.aborted) cut();
  signal.addEventListener("abort", cut, { once: true });
  socket.on("data", (chunk: Buffer) => {
    outcome.bytesUp += chunk.length;
    socket.pause();
    // Bytes the forwarder can no longer take (it ended: the server closed) are dropped.
    const more = () => socket.resume();
    opened.write(chunk).then(more, more);
  });
  // The client's half-close becomes the forwarder's end of stdin (it passes it on as one).
  socket.once("end", () => opened.endInput());
  // A client gone for good: the forwarder sees its stdin end and winds down on its own.
  socket.once("error", drop);
  socket.once("close", () => opened.endInput());
  socket.resume();

  const end = await opened.ended;
  if (end.exitCode === NOTHING_LISTENING_STATUS || end.exitCode === NO_PYTHON_STATUS) {
    outcome.error = stderr.trim() || `the forwarder exited with ${end.exitCode}`;
  } else if (end.exitCode === undefined && end.error !== undefined && !droppedHere) {
    outcome.error = `the forwarder failed: ${end.error}`;
  }
  // A connection that reached no server is reset, as a refused one would be: a browser then says
  // "connection reset", not "empty response" (a clean end would look like a server that answered nothing).
  if (outcome.error === undefined) socket.end();
  else socket.resetAndDestroy();
  await socketDone;
  signal.removeEventListener("abort", cut);
  log("port %d: %d bytes up, %d down, exit %s", port, outcome.bytesUp, outcome.bytesDown, end.exitCode);
  return outcome;
}
