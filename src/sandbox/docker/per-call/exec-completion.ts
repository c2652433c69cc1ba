/**
 * When a command counts as over, and why. The wrapper's marker lines are the sure sign; end of stream
 * is not: a background process the command started (`server &`) can hold the exec's pipes open long
 * after the command exited, so the exec's own state is polled as well. A connection that closes or
 * fails is not the command ending either: the caller checks whether it still runs and kills it.
 */
import type { Duplex } from "node:stream";
import createDebug from "debug";
import type Docker from "dockerode";
import type { AttachStreamOutput } from "./exec-output.js";

const log = createDebug("harness:exec");

/** Why the wait for a command ended; the first one to happen wins. */
export type CompletionReason =
  /** Both marker lines arrived: the wrapper reported the exit code. */
  | "marker"
  /** The attach stream ended: every process holding the exec's pipes is gone. */
  | "end"
  /** The connection closed without ending the stream. */
  | "close"
  /** The connection failed. */
  | "stream-error"
  /** ExecInspect says the exec no longer runs, and output flowed a moment longer to bring the rest in. */
  | "not-running"
  /** ExecInspect failed: the exec (or its container) is gone. */
  | "inspect-failed"
  /** The kill exec could not run: nothing more will come from inside, the container must go. */
  | "kill-failed"
  /** After the kill the stream stayed open (something outside the command holds it): given up on. */
  | "abandoned";

/** The connection went away rather than the command ending: whether it still runs must be asked. */
export function connectionLost(reason: CompletionReason): boolean {
  return reason === "close" || reason === "stream-error";
}

/** How often the exec's state is polled while nothing else says the command ended. */
const POLL_MS = 1000;
/** After ExecInspect says "not running", how long the stream must flow before the wait ends. */
const LAST_OUTPUT_MS = 200;

export interface CompletionWatch {
  /** Resolves with the first reason given, by the stream, the poll, or `settle`. */
  readonly finished: Promise<CompletionReason>;
  /** Ends the wait from outside (the kill); ignored once it ended. */
  settle(reason: CompletionReason): void;
  /** Stops polling; call once `finished` resolved. */
  stop(): void;
}

/**
 * Feeds the attach stream to `output` and watches for the command's end. The stream stays read
 * after `finished` resolves (until the caller destroys it), so output that arrives during a kill is kept.
 */
export function watchCompletion(
  exec: Docker.Exec,
  stream: Duplex,
  output: AttachStreamOutput,
): CompletionWatch {
  let settle: (reason: CompletionReason) => void = () => {};
  const finished = new Promise<CompletionReason>((resolve) => {
    settle = resolve;
  });
  stream.on("data", (chunk: Buffer) => {
    output.push(chunk);
    if (output.markersFound) settle("marker");
  });
  stream.once("end", () => settle("end"));
  stream.once("close", () => settle("close"));
  stream.once("error", (error) => {
    log("exec %s stream error: %s", exec.id, error.message);
    settle("stream-error");
  });
  const poller = setInterval(async () => {
    try {
      const info = await exec.inspect();
      // Time paused for a slow consumer does not count, or a finished command's last output (and
      // its marker) would be dropped.
      if (!info.Running) output.flow.afterFlowing(LAST_OUTPUT_MS, () => settle("not-running"));
    } catch {
      settle("inspect-failed");
    }
  }, POLL_MS);
  return { finished, settle: (reason) => settle(reason), stop: () => clearInterval(poller) };
}
