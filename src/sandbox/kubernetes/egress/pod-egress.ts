/**
 * Allowlist mode for one KubernetesSandbox: the gateway on the host (../../egress/, the same one
 * Docker uses), and in the pod egress-mux.py, which listens on the pod's 127.0.0.1 and carries each
 * connection over its exec's streams; here each becomes a connection to the gateway's socket. The
 * pod never gets a route: its only way out is this exec, and the gateway decides every connection.
 * Each command gets the proxy variables (../../docker/egress/egress-env.ts) for the mux's port.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import createDebug from "debug";
import { SandboxError } from "../../../errors.js";
import { egressEnv } from "../../docker/egress/egress-env.js";
import type { CallTag } from "../../egress/egress-gateway.js";
import { SandboxGateway } from "../../egress/sandbox-gateway.js";
import { trustEnv } from "../../egress/secrets/trust-env.js";
import { STATE_DIR } from "../../exec/exec-scripts.js";
import { programText } from "../../exec/program-text.js";
import type { EgressMonitor, ExecResult } from "../../sandbox.js";
import type { EgressRequest } from "../../sandbox-request.js";
import { asUser, EXEC_OPEN_DEADLINE_MS, runInPod } from "../api/pod-command.js";
import { openPodExec, type PodExec, type PodTarget } from "../api/pod-exec.js";
import type { KubernetesSandboxOptions } from "../kubernetes-options.js";
import { ackPayload, encodeMux, MUX_WINDOW, MuxDecoder, type MuxFrame } from "./mux-frames.js";

const log = createDebug("harness:egress");

/** The mux says its port at once; a slow API server or kubelet is given far more. */
const PORT_DEADLINE_MS = 30_000;

/** One connection the mux accepted, joined to one connection to the gateway. */
interface Joined {
  socket: Socket;
  /** Bytes sent to the mux that it has not yet handed to its client. */
  unacked: number;
}

export class PodEgress {
  private exec: PodExec | undefined;
  private port: number | undefined;
  private readonly joined = new Map<number, Joined>();
  /** Where the run's CA and bundle are in the pod, once installed. */
  private trust: { ca: string; bundle: string } | undefined;

  private constructor(
    private readonly gateway: SandboxGateway,
    private readonly dir: string,
    /** The presets' variables for the sandbox's tools (EgressRequest.clientEnv). */
    private readonly clientEnv: readonly string[],
  ) {}

  /**
   * Starts the gateway in a private directory of this process (only this process connects to it).
   * With `--secret` or `--allow-request` it makes a CA for the run, which `installTrust` puts into the pod.
   */
  static async start(egress: EgressRequest, options: KubernetesSandboxOptions): Promise<PodEgress> {
    const dir = mkdtempSync(join(tmpdir(), "harness-k8s-egress-"));
    try {
      const gateway = await SandboxGateway.start(egress, options, { socketDir: dir });
      return new PodEgress(gateway, dir, egress.clientEnv ?? []);
    } catch (error) {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }
  }

  get monitor(): EgressMonitor {
    return this.gateway.monitor;
  }

  /** The mux's port while it runs. */
  get muxPort(): number | undefined {
    return this.port;
  }

  /** Starts the mux in the pod (as the machinery, acting as `user`); rejects when it cannot. */
  async startMux(target: PodTarget, user: string): Promise<void> {
    this.closeMux();
    let portSaid: ((port: number) => void) | undefined;
    const said = new Promise<number>((resolve) => {
      portSaid = resolve;
    });
    const decoder = new MuxDecoder((frame) => {
      if (frame.kind === "P") portSaid?.(Number(frame.payload.toString("latin1")));
      else this.fromMux(frame);
    });
    let stderr = "";
    const exec = await openPodExec(
      target,
      ["python3", "-I", "-S", "-c", programText(new URL("./egress-mux.py", import.meta.url)), user],
      {
        stdout: (chunk) => decoder.push(chunk),
        stderr: (chunk) => {
          stderr = `${stderr}${chunk.toString("utf8")}`.slice(-1000);
        },
      },
      { stdin: true, deadlineMs: EXEC_OPEN_DEADLINE_MS },
    );
    this.exec = exec;
    exec.ended.then(() => {
      if (this.exec === exec) this.lost(stderr);
    });
    let timer: NodeJS.Timeout | undefined;
    const port = await Promise.race([
      said,
      exec.ended.then(() => undefined),
      new Promise<undefined>((resolve) => {
        timer = setTimeout(() => resolve(undefined), PORT_DEADLINE_MS);
      }),
    ]);
    clearTimeout(timer);
    if (port === undefined || !Number.isInteger(port)) {
      this.closeMux();
      throw new SandboxError(
        `the sandbox's network relay did not start: ${stderr.trim().slice(-300) || "no answer"}`,
        { containerId: target.pod },
      );
    }
    this.port = port;
    log("mux in %s on port %d", target.pod, port);
  }

  /** Before each command: a notice when the mux had ended and was started again (a new port). */
  async ensureMux(target: PodTarget, user: string): Promise<string | undefined> {
    if (this.exec && this.port !== undefined) return undefined;
    await this.startMux(target, user);
    return "the sandbox's network relay had stopped; it was started again before this command, on a new port, and the proxy variables of every command point at it";
  }

  /**
   * `--secret`, `--allow-request`: the run's CA (and the bundle: the host's roots plus that CA) into
   * the pod's state directory, as the sandbox user (no host directory is mounted into a pod). The
   * sandbox may replace them; that only breaks its own tools' trust, never the gateway's decisions.
   */
  async installTrust(target: PodTarget, user: string): Promise<void> {
    const files = this.gateway.server.trustFiles;
    if (files === undefined) return;
    for (const name of [files.ca, files.bundle]) {
      const content = Readable.from([readFileSync(join(this.dir, name))]);
      const path = `${STATE_DIR}/${name}`;
      const result = await runInPod(
        target,
        asUser(user, ["/bin/sh", "-c", 'cat > "$1"', "harness-trust", path]),
        {
          stdin: content,
          deadlineMs: EXEC_OPEN_DEADLINE_MS,
        },
      );
      if (result.exitCode !== 0) {
        throw new SandboxError(
          `putting the run's CA into the pod failed: ${result.error ?? result.stderr.trim()}`,
          {
            containerId: target.pod,
          },
        );
      }
    }
    this.trust = { ca: `${STATE_DIR}/${files.ca}`, bundle: `${STATE_DIR}/${files.bundle}` };
  }

  /**
   * The proxy variables for a command, and the presets' variables for its tools: none while no mux
   * runs (then the command has no network).
   */
  env(): string[] {
    if (this.port === undefined) return [];
    return [
      ...egressEnv(this.port),
      ...this.clientEnv,
      ...(this.trust ? trustEnv(this.trust.ca, this.trust.bundle) : []),
      ...this.gateway.server.secretEnv(),
    ];
  }

  beginCall(callId: string | undefined): CallTag {
    return this.gateway.beginCall(callId);
  }

  endCall(): void {
    this.gateway.endCall();
  }

  /** The command's result with its refusals, secrets' values redacted (`SandboxGateway.callResult`). */
  callResult(result: ExecResult, tag: CallTag): ExecResult {
    return this.gateway.callResult(result, tag);
  }

  /** Ends the mux (its stdin closed) and every connection it carried. */
  closeMux(): void {
    const exec = this.exec;
    this.exec = undefined;
    this.port = undefined;
    for (const joined of this.joined.values()) joined.socket.destroy();
    this.joined.clear();
    exec?.endInput();
    exec?.close();
  }

  async close(): Promise<void> {
    this.closeMux();
    try {
      await this.gateway.server.close();
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }

  private lost(stderr: string): void {
    log("the mux ended: %s", stderr.trim().slice(-300));
    this.closeMux();
  }

  private send(kind: "D" | "E" | "C" | "A", id: number, payload?: Buffer): void {
    this.exec?.write(encodeMux(kind, id, payload)).catch(() => {});
  }

  private fromMux(frame: MuxFrame): void {
    const { kind, id } = frame;
    if (kind === "O") {
      this.join(id);
      return;
    }
    const joined = this.joined.get(id);
    if (!joined) return;
    if (kind === "D") {
      const bytes = frame.payload.length;
      // Acknowledged once the gateway's socket took them: the mux reads its client no faster.
      joined.socket.write(Buffer.from(frame.payload), () => this.send("A", id, ackPayload(bytes)));
    } else if (kind === "E") joined.socket.end();
    else if (kind === "C") {
      this.joined.delete(id);
      joined.socket.destroy();
    } else if (kind === "A") {
      joined.unacked -= frame.payload.readUInt32BE(0);
      if (joined.unacked < MUX_WINDOW) joined.socket.resume();
    }
  }

  /** A connection to the gateway for the mux's connection `id`. */
  private join(id: number): void {
    const socket = connect(this.gateway.server.socketPath);
    const joined: Joined = { socket, unacked: 0 };
    this.joined.set(id, joined);
    socket.on("data", (chunk: Buffer) => {
      joined.unacked += chunk.length;
      this.send("D", id, chunk);
      if (joined.unacked >= MUX_WINDOW) socket.pause();
    });
    socket.on("end", () => this.send("E", id));
    socket.on("error", (error) => log("gateway connection %d: %s", id, error.message));
    socket.on("close", () => {
      if (this.joined.get(id) !== joined) return;
      this.joined.delete(id);
      this.send("C", id);
    });
  }
}
