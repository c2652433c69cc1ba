/**
 * A `Sandbox` for unit tests: records every command and answers from a script. No Docker.
 * Anchor: mini-swe-agent `tests/agents/test_default.py` (deterministic model + local environment).
 */
import type {
  EgressMonitor,
  EgressRecord,
  ExecOptions,
  ExecResult,
  Sandbox,
  SandboxDescription,
} from "../../src/sandbox/sandbox.js";

/** A whole `ExecResult` from a few fields; `failed` and the byte counts follow from the rest unless given. */
export function makeExecResult(partial: Partial<ExecResult> = {}): ExecResult {
  const stdout = partial.stdout ?? "";
  const stderr = partial.stderr ?? "";
  const exitCode = "exitCode" in partial ? partial.exitCode : 0;
  const timedOut = partial.timedOut ?? false;
  const isCanceled = partial.isCanceled ?? false;
  return {
    command: "",
    cwd: "/workspace",
    durationMs: 12,
    isTruncated: false,
    oomKilled: false,
    shortMessage: "",
    notices: [],
    stdoutBytes: Buffer.byteLength(stdout),
    stderrBytes: Buffer.byteLength(stderr),
    failed: exitCode !== 0 || timedOut || isCanceled,
    ...partial,
    stdout,
    stderr,
    exitCode,
    timedOut,
    isCanceled,
  };
}

/** Answers one command: fields of its result, or a function of the command (may never settle: see `hang`). */
export type ExecHandler = (
  command: string,
  options: ExecOptions,
) => Partial<ExecResult> | Promise<Partial<ExecResult>>;

/** One scripted answer. An `Error` makes `exec` reject with it (use `SandboxError` for infrastructure failure). */
export type ExecStep = Partial<ExecResult> | ExecHandler | Error;

/** A command that runs until its signal aborts it (the fake then resolves it as cancelled). */
export const hang: ExecHandler = () => new Promise<never>(() => {});

export class FakeSandbox implements Sandbox {
  readonly workdir: string;
  /** Every `exec` call, in order. */
  readonly calls: Array<{ command: string; options: ExecOptions }> = [];
  /** Whether `stop` (or dispose) was called. */
  stopped = false;
  readonly #steps: ExecStep[] | ExecHandler;

  /** A fake never copies a workspace. */
  readonly copy = undefined;
  /** Allowlist mode's monitor when one was given (the description's network is then "allowlist"). */
  readonly egress: EgressMonitor | undefined;

  /** `steps` answer the commands in order (an empty success once they run out), or one handler answers all. */
  constructor(
    steps: ExecStep[] | ExecHandler = [],
    options: { workdir?: string; egress?: EgressMonitor } = {},
  ) {
    this.#steps = Array.isArray(steps) ? [...steps] : steps;
    this.workdir = options.workdir ?? "/workspace";
    this.egress = options.egress;
  }

  get description(): SandboxDescription {
    return {
      id: "fake",
      isolation: "bind",
      workspace: "/host/workspace",
      workdir: this.workdir,
      image: "fake",
      user: "1000:1000",
      network: this.egress === undefined ? "none" : "allowlist",
      runtime: undefined,
      limits: { memoryBytes: 2 * 1024 ** 3, cpus: 2, pidsLimit: 512 },
      readOnlyPaths: [],
    };
  }

  /** The commands run so far. */
  get commands(): string[] {
    return this.calls.map((call) => call.command);
  }

  async exec(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    this.calls.push({ command, options });
    const step = Array.isArray(this.#steps) ? (this.#steps.shift() ?? {}) : this.#steps;
    if (step instanceof Error) throw step;
    const { signal } = options;
    if (signal?.aborted) return canceled(command);
    if (signal === undefined)
      return makeExecResult({ command, ...(await answerFor(step, command, options)) });
    // Listen before the handler runs: a handler may abort synchronously (Ctrl-C right as a command starts).
    let onAbort = () => {};
    const aborted = new Promise<"aborted">((resolve) => {
      onAbort = () => resolve("aborted");
      signal.addEventListener("abort", onAbort, { once: true });
    });
    try {
      const outcome = await Promise.race([answerFor(step, command, options), aborted]);
      return outcome === "aborted" ? canceled(command) : makeExecResult({ command, ...outcome });
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

/** An `EgressMonitor` whose records the test emits by hand, as the gateway would when a connection ends. */
export class FakeEgressMonitor implements EgressMonitor {
  readonly allowHosts: readonly string[];
  readonly allowPrivate: boolean;
  readonly limitBytes: number;
  readonly #listeners = new Set<(record: EgressRecord) => void>();

  constructor(options: { allowHosts?: readonly string[]; allowPrivate?: boolean; limitBytes?: number } = {}) {
    this.allowHosts = options.allowHosts ?? ["example.com:443", "example.com:80"];
    this.allowPrivate = options.allowPrivate ?? false;
    this.limitBytes = options.limitBytes ?? 2 * 1024 ** 3;
  }

  /** How many listeners are subscribed now. */
  get listenerCount(): number {
    return this.#listeners.size;
  }

  subscribe(listener: (record: EgressRecord) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Hands `record` (defaults filled in: an allowed CONNECT to example.com:443) to every listener. */
  emit(record: Partial<EgressRecord> = {}): EgressRecord {
    const whole: EgressRecord = {
      time: "2026-11-30T10:00:00.000Z",
      host: "example.com",
      port: 443,
      method: "CONNECT",
      allowed: true,
      bytesUp: 100,
      bytesDown: 1000,
      durationMs: 20,
      ...record,
    };
    for (const listener of this.#listeners) listener(whole);
    return whole;
  }
}

async function answerFor(
  step: Partial<ExecResult> | ExecHandler,
  command: string,
  options: ExecOptions,
): Promise<Partial<ExecResult>> {
  return typeof step === "function" ? step(command, options) : step;
}

function canceled(command: string): ExecResult {
  return makeExecResult({
    command,
    exitCode: undefined,
    isCanceled: true,
    failed: true,
    stdout: "partial output\n",
    shortMessage: "Command was canceled",
  });
}
