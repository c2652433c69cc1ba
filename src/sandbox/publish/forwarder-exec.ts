/**
 * What the shared half of `--publish` needs from an engine: one exec of the forwarder
 * (port-forward.py, started by `forwardCommand`) as the sandbox user, whose stdin, stdout and end it
 * can use. Docker opens it through its engine (`../docker/publish/`), Kubernetes through the pod's
 * exec API (`../kubernetes/pod-forwarder.ts`); the listener, the copying both ways and the records
 * are the same on both.
 */

/** How a forwarder's exec ended. */
export interface ForwarderEnd {
  /** Its exit status; undefined when the engine could not say. */
  exitCode: number | undefined;
  /** What the engine said instead of an exit status (the exec could not run, the pod went), when it said one. */
  error?: string | undefined;
}

/** Where a forwarder's output goes, chunk by chunk, as it comes. */
export interface ForwarderOutput {
  /** The server's bytes, for the host's client. */
  stdout(chunk: Buffer): void;
  /** The forwarder's own complaints (nothing listening, no python3). */
  stderr(chunk: Buffer): void;
}

/**
 * One running forwarder. Contract: no method throws; `write` may reject once the exec's connection
 * is gone, and `ended` never rejects.
 */
export interface ForwarderExec {
  /** Bytes for the forwarder's stdin (the server); resolves when more may be sent. */
  write(chunk: Buffer): Promise<void>;
  /** Ends the forwarder's stdin, leaving its output flowing (it passes this on as a half-close). */
  endInput(): void;
  /** Stops handing on its output (the host's client is slow), and goes on again. */
  pause(): void;
  resume(): void;
  /** Drops the exec's connection. */
  close(): void;
  /** Settles once the exec's output has all been handed on and it ended. */
  readonly ended: Promise<ForwarderEnd>;
}

/**
 * Starts one forwarder to `port` on the sandbox's loopback, as the sandbox user (never root);
 * rejects when the engine would not start it.
 */
export type OpenForwarder = (port: number, output: ForwarderOutput) => Promise<ForwarderExec>;
