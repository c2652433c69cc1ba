/**
 * Starting and watching the in-sandbox relay (egress-relay-script.ts) of allowlist mode: one exec
 * that lives as long as this harness process uses the sandbox. Its stdin stays attached and open;
 * closing it (or this process dying) ends the relay. Its output is read to the end, always: on
 * Engine 20.10 an exec stream left unread can hold up other execs.
 */
import type { Duplex } from "node:stream";
import createDebug from "debug";
import type Docker from "dockerode";
import { SandboxError } from "../../../errors.js";
import { Demuxer } from "../exec/demux.js";
import { startExec } from "../exec/exec-start.js";
import { NO_PYTHON, relayCommand, SOCKET_MISSING } from "./egress-relay-script.js";

const log = createDebug("harness:egress");

/** How long the relay may take to say its port (python3 starts in about 30 ms; a loaded host is slower). */
const START_DEADLINE_MS = 15_000;

/** The first line the relay printed, or why there was none. */
type FirstLine = { line: string } | { ended: "exited" | "deadline" };

/** The relay did not start; `socketMissing`: the container does not see the gateway's socket. */
export class RelayStartError extends SandboxError {
  readonly socketMissing: boolean;
  constructor(message: string, options: { containerId: string; socketMissing: boolean }) {
    super(message, { containerId: options.containerId });
    this.socketMissing = options.socketMissing;
  }
}

export class EgressRelay {
  private ended = false;

  private constructor(
    private readonly exec: Docker.Exec,
    private readonly stream: Duplex,
    /** The relay's port on the container's 127.0.0.1 (the proxy variables point here). */
    readonly port: number,
    private readonly finished: Promise<void>,
  ) {
    void finished.then(() => {
      this.ended = true;
    });
  }

  /**
   * Starts the relay as `machineryUser` (which drops to act as `user`, keeping root's real uid where
   * it is root, so that no command can signal or trace it), copying to `socketPath` (a container path), and waits for its port.
   * Rejects with a SandboxError saying why when it cannot start (no python3 in the image, the socket
   * not visible, no answer within the deadline); nothing of it is left running then.
   */
  static async start(
    container: Docker.Container,
    user: string,
    machineryUser: string,
    socketPath: string,
    deadlineMs = START_DEADLINE_MS,
  ): Promise<EgressRelay> {
    const { exec, stream } = await startExec(
      container,
      {
        Cmd: relayCommand(socketPath, user),
        User: machineryUser,
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
      },
      deadlineMs,
      "the network relay",
    ).catch((error: unknown) => {
      throw new SandboxError(`starting the network relay failed: ${(error as Error).message}`, {
        cause: error,
        containerId: container.id,
      });
    });
    const finished = new Promise<void>((resolve) => {
      stream.once("end", resolve);
      stream.once("close", resolve);
      stream.once("error", () => resolve());
    });
    const first = await readFirstLine(stream, finished, deadlineMs);
    const port = "line" in first ? /^PORT ([0-9]{1,5})$/.exec(first.line)?.[1] : undefined;
    if (port === undefined) {
      stream.destroy();
      const socketMissing = "line" in first && first.line.startsWith(SOCKET_MISSING);
      throw new RelayStartError(relayFailure(first, deadlineMs), {
        containerId: container.id,
        socketMissing,
      });
    }
    log("relay %s listening on 127.0.0.1:%s", exec.id.slice(0, 12), port);
    return new EgressRelay(exec, stream, Number(port), finished);
  }

  /**
   * Whether the relay still runs. A relay whose stream ended is dead without asking; otherwise the
   * exec's state decides (a command may have killed it a moment ago). Any doubt answers false.
   */
  async running(): Promise<boolean> {
    if (this.ended) return false;
    return this.exec.inspect().then(
      (info) => info.Running,
      () => false,
    );
  }

  /** Closes its stdin so it exits, and waits (briefly) until it has; then drops the stream. */
  async close(waitMs = 3_000): Promise<void> {
    if (!this.ended) {
      this.stream.end();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        this.finished,
        new Promise<void>((resolve) => {
          timer = setTimeout(resolve, waitMs);
        }),
      ]);
      clearTimeout(timer);
    }
    this.stream.destroy();
  }
}

/**
 * Reads the stream until stdout's first line, then keeps reading (and dropping) everything after it
 * for as long as the stream lives. Stderr is kept for the debug log only.
 */
function readFirstLine(stream: Duplex, finished: Promise<void>, deadlineMs: number): Promise<FirstLine> {
  let stdout = "";
  let decided = false;
  return new Promise<FirstLine>((resolve) => {
    const timer = setTimeout(() => decide({ ended: "deadline" }), deadlineMs);
    const decide = (result: FirstLine) => {
      if (decided) return;
      decided = true;
      clearTimeout(timer);
      resolve(result);
    };
    const demuxer = new Demuxer((name, payload) => {
      if (name === "stderr") {
        log("relay stderr: %s", payload.toString("utf8").slice(0, 2000));
        return;
      }
      if (decided) return;
      stdout += payload.toString("utf8");
      const newline = stdout.indexOf("\n");
      if (newline >= 0) decide({ line: stdout.slice(0, newline) });
      else if (stdout.length > 4096) decide({ line: stdout.slice(0, 200) });
    });
    stream.on("data", (chunk: Buffer) => demuxer.push(chunk));
    void finished.then(() => decide({ ended: "exited" }));
  });
}

function relayFailure(first: FirstLine, deadlineMs: number): string {
  if ("line" in first && first.line === NO_PYTHON) {
    return "allowlist mode needs python3 in the image (its network relay is a python3 program); use an image with python3, or run without --allow-host/--allow";
  }
  if ("line" in first && first.line.startsWith(SOCKET_MISSING)) {
    return `the network relay does not see the gateway's socket in the sandbox (${first.line.slice(SOCKET_MISSING.length + 2)})`;
  }
  if ("line" in first && first.line.startsWith("ERR ")) {
    return `the network relay could not start: ${first.line.slice(4)}`;
  }
  if ("line" in first) return `the network relay said something unexpected: ${JSON.stringify(first.line)}`;
  if (first.ended === "deadline") return `the network relay did not say its port within ${deadlineMs} ms`;
  return "the network relay exited before saying its port";
}
