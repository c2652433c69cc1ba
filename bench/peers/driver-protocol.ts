/**
 * The bench's end of the line protocol every system's driver speaks (peer_driver.py for the peers,
 * harness-driver.ts for harness; the requests and replies are in peer_driver.py's docstring): one
 * child process per system and round, requests in order, each reply awaited up to its deadline.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";

/** One output as the caller got it: its bytes (a string as UTF-8), or for a flood a digest. */
export interface Output {
  /** What the system returned: a string or bytes. */
  kind: "str" | "bytes";
  /** Bytes (characters for a digest of a string). */
  len: number;
  b64?: string;
  /** Digest mode: every byte (character) was NUL. */
  allZero?: boolean;
}

export interface DriverReply {
  /** false: the call had not come back by its deadline (`waited` seconds); it was left running. */
  returned: boolean;
  waited?: number;
  /** The driver is stuck on an earlier call that never returned. */
  stuck?: boolean;
  /** The call, timed inside the driver. */
  ms?: number;
  /** The system's own failure or message (an exception, a timeout message). */
  error?: string | null;
  stdout?: Output | null;
  /** null where the system merges stderr into its one output (`merged`). */
  stderr?: Output | null;
  merged?: boolean;
  exit?: number | null;
  /** What the system itself said about a timeout, where it says anything. */
  timedOut?: boolean | null;
  /** harness only: output was cut to fit, and how many bytes stdout carried in all. */
  truncated?: boolean;
  counted?: number;
  /** harness only: the tool result's note on bytes not shown as themselves (null: none). */
  stated?: string | null;
}

export interface Ready {
  system: string;
  /** What the system was given, in words: network, how a call runs. */
  settings: Record<string, string>;
}

export interface Request {
  op: "open" | "run" | "close";
  /** Seconds the driver waits for the call before it reports that it never returned. */
  deadline: number;
  command?: string;
  /** The command's own timeout, in seconds, given to the system. */
  timeout?: number;
  digest?: boolean;
}

/** Seconds past a request's deadline after which the bench gives up on the driver itself. */
const DRIVER_SLACK_S = 20;

export class DriverProcess {
  private readonly pending: Array<(line: string | undefined) => void> = [];
  private readonly lines: string[] = [];
  private stderrTail = "";
  private closed = false;

  private constructor(private readonly child: ChildProcess) {
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
      const waiter = this.pending.shift();
      if (waiter) waiter(line);
      else this.lines.push(line);
    });
    child.stderr?.on("data", (chunk: Buffer) => {
      this.stderrTail = `${this.stderrTail}${chunk.toString("utf8")}`.slice(-3000);
    });
    child.once("exit", () => {
      this.closed = true;
      for (const waiter of this.pending.splice(0)) waiter(undefined);
    });
  }

  /** Spawns the driver and waits for its `ready` line (its modules loaded). */
  static async start(
    command: string,
    args: readonly string[],
    env: NodeJS.ProcessEnv,
  ): Promise<DriverProcess> {
    const child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"], env });
    const driver = new DriverProcess(child);
    const line = await driver.nextLine(120);
    const ready = line === undefined ? undefined : (JSON.parse(line) as { ready?: Ready }).ready;
    if (!ready) {
      driver.kill();
      throw new Error(`driver ${args.join(" ")} did not start: ${driver.stderr()}`);
    }
    driver.ready = ready;
    return driver;
  }

  ready: Ready = { system: "", settings: {} };

  get pid(): number {
    return this.child.pid ?? 0;
  }

  stderr(): string {
    return this.stderrTail.trim().split("\n").slice(-4).join(" | ");
  }

  private nextLine(timeoutS: number): Promise<string | undefined> {
    const queued = this.lines.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    if (this.closed) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        const i = this.pending.indexOf(done);
        if (i >= 0) this.pending.splice(i, 1);
        resolve(undefined);
      }, timeoutS * 1000);
      const done = (line: string | undefined) => {
        clearTimeout(timer);
        resolve(line);
      };
      this.pending.push(done);
    });
  }

  /** Sends one request; a driver that exits or stays silent past the deadline counts as not returned. */
  async request(request: Request): Promise<DriverReply> {
    if (this.closed) return { returned: false, waited: 0, error: `driver gone: ${this.stderr()}` };
    this.child.stdin?.write(`${JSON.stringify(request)}\n`);
    const line = await this.nextLine(request.deadline + DRIVER_SLACK_S);
    if (line === undefined) {
      this.kill();
      return { returned: false, waited: request.deadline, error: `driver silent or gone: ${this.stderr()}` };
    }
    return JSON.parse(line) as DriverReply;
  }

  kill(): void {
    if (!this.closed) this.child.kill("SIGKILL");
  }

  /** Resolves once the process has exited (killing it after `graceS`). */
  async exit(graceS: number): Promise<void> {
    if (this.closed || this.child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    const timer = setTimeout(() => this.kill(), graceS * 1000);
    await exited;
    clearTimeout(timer);
  }
}
