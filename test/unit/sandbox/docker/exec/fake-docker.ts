/**
 * A hand-built stand-in for the few parts of a dockerode container that `runDockerExec` and
 * `runSimpleExec` use: `exec()` → { id, start(), inspect() }, where `start()` hands back a
 * PassThrough the test writes multiplexed frames to. Anchor: testcontainers-node
 * `docker-container-client.test.ts` (a fake exec whose raw stream is a PassThrough).
 */
import { PassThrough } from "node:stream";
import type Docker from "dockerode";
import { MARKER_LEAD, START_LEAD } from "../../../../../src/sandbox/docker/per-call/wrapper-script.js";
import type { ExecRequest } from "../../../../../src/sandbox/exec/exec-types.js";

/** One frame of Docker's attach stream: type byte, three zero bytes, big-endian length, payload. */
export function frame(type: number, payload: string | Buffer): Buffer {
  const body = typeof payload === "string" ? Buffer.from(payload) : payload;
  const header = Buffer.alloc(8);
  header.writeUInt8(type, 0);
  header.writeUInt32BE(body.length, 4);
  return Buffer.concat([header, body]);
}

interface ExecState {
  Running: boolean;
  ExitCode: number | null;
}

/** The command's exec (Cmd holds "harness-exec"), driven by the test. */
export class FakeRun {
  readonly stream = new PassThrough();
  /** What ExecInspect answers. */
  state: ExecState = { Running: true, ExitCode: null };
  /** How many times ExecInspect was asked (the completion watch polls it). */
  inspections = 0;

  constructor(readonly options: Docker.ExecCreateOptions) {}

  get cmd(): string[] {
    return this.options.Cmd ?? [];
  }

  /** Cmd is ["/bin/sh", "-c", WRAPPER, "harness-exec", nonce, workdir, command, startDir]. */
  get nonce(): string {
    return this.cmd[4] ?? "";
  }

  stdout(data: string | Buffer): void {
    this.stream.write(frame(1, data));
  }

  stderr(data: string | Buffer): void {
    this.stream.write(frame(2, data));
  }

  /** The line the wrapper prints first, before the command runs: its pid and start time. */
  startFrame(pid = FAKE_WRAPPER_PID, startTime = FAKE_WRAPPER_START): Buffer {
    return frame(1, `${START_LEAD}${this.nonce}:${pid}:${startTime}\n`);
  }

  /** The wrapper's two marker lines as frames, stderr first as the wrapper prints them. */
  markerFrames(exitCode: number, cwd: string, oomKills = 0): Buffer {
    return Buffer.concat([this.stderrMarker(), this.stdoutMarker(exitCode, cwd, oomKills)]);
  }

  stderrMarker(): Buffer {
    return frame(2, `${MARKER_LEAD}${this.nonce}:\n`);
  }

  /** "exit code:OOM kills:background count:cwd", as the wrapper prints it. */
  stdoutMarker(exitCode: number, cwd: string, oomKills = 0, background = 0): Buffer {
    return frame(1, `${MARKER_LEAD}${this.nonce}:${exitCode}:${oomKills}:${background}:${cwd}\n`);
  }

  finish(exitCode: number): void {
    this.state = { Running: false, ExitCode: exitCode };
  }
}

/** The pid and start time the fake wrapper reports in its start line. */
export const FAKE_WRAPPER_PID = 4242;
export const FAKE_WRAPPER_START = "9000017";

/** How every other exec (the kill exec, helpers) behaves. */
export interface HelperPlan {
  /**
   * "ok": prints `stdout`, exits 0 and, like a kill, ends the running command (its stream ends,
   * inspect reports `killedExitCode`). "exits-nonzero": prints `stdout`, exits 126.
   * "create-fails": `exec()` rejects, as when the pid limit is exhausted.
   */
  outcome: "ok" | "exits-nonzero" | "create-fails";
  stdout?: string;
  stderr?: string;
  killedExitCode?: number;
  /** Delay before the helper's output and end of stream. */
  delayMs?: number;
}

export class FakeContainer {
  /** Every exec created, in order. */
  readonly created: Docker.ExecCreateOptions[] = [];
  helper: HelperPlan = { outcome: "ok", stdout: "left:\n" };
  /** Resolves with the command's exec once `start()` was called. */
  readonly started: Promise<FakeRun>;
  private resolveStarted: (run: FakeRun) => void = () => {};
  private current: FakeRun | undefined;

  /**
   * `onStart` runs inside `start()`, before the stream is handed over (writes are buffered), after
   * the wrapper's start line unless `startLine` is false (a wrapper that died before printing it).
   */
  constructor(
    private readonly onStart?: (run: FakeRun) => void,
    private readonly startLine = true,
  ) {
    this.started = new Promise((resolve) => {
      this.resolveStarted = resolve;
    });
  }

  get container(): Docker.Container {
    return this as unknown as Docker.Container;
  }

  /** Cmd of every kill exec created. */
  get killCmds(): string[][] {
    return this.created.map((o) => o.Cmd ?? []).filter((cmd) => cmd.includes("harness-kill"));
  }

  async exec(options: Docker.ExecCreateOptions) {
    this.created.push(options);
    const id = `exec-${this.created.length}`;
    if (!options.Cmd?.includes("harness-exec")) return this.helperExec(id);
    const run = new FakeRun(options);
    this.current = run;
    return {
      id,
      start: async () => {
        if (this.startLine) run.stream.write(run.startFrame());
        this.onStart?.(run);
        this.resolveStarted(run);
        return run.stream;
      },
      inspect: async () => {
        run.inspections += 1;
        return { ID: id, ...run.state };
      },
    };
  }

  private helperExec(id: string) {
    const plan = this.helper;
    if (plan.outcome === "create-fails") {
      throw new Error("OCI runtime exec failed: fork/exec: resource temporarily unavailable");
    }
    const stream = new PassThrough();
    return {
      id,
      start: async () => {
        setTimeout(() => {
          if (plan.outcome === "ok" && this.current) {
            this.current.finish(plan.killedExitCode ?? 143);
            this.current.stream.end();
          }
          // The kill script reports only after its targets are gone: a moment after the command's end.
          setTimeout(() => {
            if (plan.stderr !== undefined) stream.write(frame(2, plan.stderr));
            stream.end(frame(1, plan.stdout ?? ""));
          }, 10);
        }, plan.delayMs ?? 0);
        return stream;
      },
      inspect: async () => ({ ID: id, Running: false, ExitCode: plan.outcome === "ok" ? 0 : 126 }),
    };
  }
}

/** An exec request with small buffers and a long timeout; tests override what they exercise. */
export function execRequest(overrides: Partial<ExecRequest> = {}): ExecRequest {
  return {
    command: "true",
    user: "1000:1000",
    workdir: "/work",
    startDir: "/work",
    timeoutMs: 10_000,
    headBytes: 1000,
    tailBytes: 1000,
    killGraceSeconds: 2,
    ...overrides,
  };
}
