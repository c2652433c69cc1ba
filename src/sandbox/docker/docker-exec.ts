/**
 * One command through the Docker Engine exec API, from create to a decided outcome.
 * The API cannot kill an exec (moby/moby#9098), so timeouts and cancels run KILL_SCRIPT in a second
 * exec. "Finished" comes from the wrapper's marker lines, or end of stream, or the exec's own state,
 * whichever is first; never from end of stream alone (a background process can hold it open).
 */
import { randomBytes } from "node:crypto";
import type { Duplex } from "node:stream";
import createDebug from "debug";
import type Docker from "dockerode";
import { Demuxer, type StreamName } from "./demux.js";
import { EndMarkerScanner } from "./end-marker.js";
import { EXEC_TAG_VAR, KILL_SCRIPT, MARKER_LEAD, START_LEAD, WRAPPER_SCRIPT } from "./exec-scripts.js";
import { OutputBuffer } from "./output-buffer.js";
import { OutputFlow } from "./output-flow.js";
import { StartLineReader, type WrapperStart } from "./start-line.js";

const log = createDebug("harness:exec");

export interface ExecRequest {
  command: string;
  /** "uid:gid" the command runs as. */
  user: string;
  /** The workspace path in the container: the fallback when `startDir` is gone or unusable. */
  workdir: string;
  /** Where the command starts: the cwd the previous command left, kept by the caller. */
  startDir: string;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  /** As `ExecOptions.onOutput`: a returned promise pauses reading until it settles. */
  onOutput?: ((stream: StreamName, chunk: Buffer) => void | Promise<void>) | undefined;
  headBytes: number;
  tailBytes: number;
  /** Seconds between TERM and KILL. */
  killGraceSeconds: number;
  /** How long creating and starting the exec may take. Default 30 s. */
  startDeadlineMs?: number;
}

export interface ExecOutcome {
  stdout: OutputBuffer;
  stderr: OutputBuffer;
  /** From the marker, else from ExecInspect; undefined if neither said. */
  exitCode: number | undefined;
  /** OOM kills the memory cgroup counted while the command ran (0 when unknown). */
  oomKills: number;
  /** The cwd the command left behind, when the wrapper lived to report it. */
  endCwd: string | undefined;
  timedOut: boolean;
  canceled: boolean;
  /** The kill exec itself failed (e.g. the pid limit is exhausted): the container needs a restart. */
  killFailed: boolean;
  /** Processes still carrying the command's tag after the kill (pids), e.g. in another session. */
  survivors: string[];
  /** The wrapper never reported: its process was killed from outside (e.g. `kill -9 -1`). */
  wrapperLost: boolean;
  durationMs: number;
}

/** How long creating and starting an exec may take before the engine counts as wedged. */
const START_DEADLINE_MS = 30_000;
/** The longest delay setTimeout honours. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** How often the exec's state is polled while nothing else says the command ended. */
const POLL_MS = 1000;
/** After a kill, how long to wait for the exec to wind down before giving up on its stream. */
const AFTER_KILL_MS = 5000;
/** How long a kill waits for the wrapper's start line when it has not arrived yet. */
const START_LINE_WAIT_MS = 2000;

export async function runDockerExec(container: Docker.Container, req: ExecRequest): Promise<ExecOutcome> {
  const started = performance.now();
  const nonce = randomBytes(8).toString("hex");
  const stdout = new OutputBuffer(req.headBytes, req.tailBytes);
  const stderr = new OutputBuffer(req.headBytes, req.tailBytes);
  const buffers = { stdout, stderr };
  const flow = new OutputFlow();
  const onOutputFailed = (error: unknown) => log("onOutput failed: %s", (error as Error)?.message);
  const forward = (name: StreamName) => (chunk: Buffer) => {
    buffers[name].write(chunk);
    if (!flow.accepts()) return;
    try {
      const wait = req.onOutput?.(name, chunk);
      // The consumer is behind (a slow pipe): read nothing more until it catches up.
      if (wait instanceof Promise) flow.hold(wait, onOutputFailed);
    } catch (error) {
      // A display or saving callback must not take the exec (or the process) down with it.
      onOutputFailed(error);
    }
  };
  const scanners = {
    stdout: new EndMarkerScanner(`${MARKER_LEAD}${nonce}:`, forward("stdout")),
    stderr: new EndMarkerScanner(`${MARKER_LEAD}${nonce}`, forward("stderr")),
  };
  const startLine = new StartLineReader(START_LEAD, nonce, (chunk) => scanners.stdout.push(chunk));

  // A wedged engine may never answer create or start; the caller treats a rejection here as "not
  // started" and restarts the container. Timeout and abort only apply once the command runs.
  const exec = await withDeadline(
    container.exec({
      Cmd: ["/bin/sh", "-c", WRAPPER_SCRIPT, "harness-exec", nonce, req.workdir, req.command, req.startDir],
      Env: [`${EXEC_TAG_VAR}=${nonce}`],
      User: req.user,
      WorkingDir: req.workdir,
      AttachStdin: false,
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
    }),
    req.startDeadlineMs ?? START_DEADLINE_MS,
    "creating the exec",
  );
  const stream: Duplex = await withDeadline(
    exec.start({ hijack: true, stdin: false }),
    req.startDeadlineMs ?? START_DEADLINE_MS,
    "starting the exec",
  );
  flow.attach(stream);
  const demuxer = new Demuxer((name, payload) =>
    name === "stdout" ? startLine.push(payload) : scanners.stderr.push(payload),
  );

  let timedOut = false;
  let canceled = false;
  let killFailed = false;
  let survivors: string[] = [];
  let settle: (how: string) => void = () => {};
  const finished = new Promise<string>((resolve) => {
    settle = resolve;
  });

  stream.on("data", (chunk: Buffer) => {
    demuxer.push(chunk);
    if (scanners.stdout.found && scanners.stderr.found) settle("marker");
  });
  stream.once("end", () => settle("end"));
  stream.once("close", () => settle("close"));
  stream.once("error", (error) => {
    log("exec %s stream error: %s", exec.id, error.message);
    settle("error");
  });

  const kill = async () => {
    try {
      // The wrapper prints its start line before the command runs; on a very short timeout it may
      // still be on its way. Without it the killer still finds the command's tagged processes.
      const start = await firstOf(startLine.whenDecided(), START_LINE_WAIT_MS);
      const out = await runSimpleExec(
        container,
        [
          "/bin/sh",
          "-c",
          KILL_SCRIPT,
          "harness-kill",
          nonce,
          String(req.killGraceSeconds),
          ...startArgs(start),
        ],
        req.user,
        // The grace, a few rounds of KILL, and room for a slow engine.
        req.killGraceSeconds * 1000 + 10_000,
      );
      const left = /left:(.*)/.exec(out)?.[1]?.trim() ?? "";
      survivors = left ? left.split(/\s+/) : [];
    } catch (error) {
      log("kill exec failed for %s: %s", exec.id, (error as Error).message);
      killFailed = true;
      // Nothing more will come from inside; the caller restarts the container, which ends it all.
      settle("kill-failed");
    }
    setTimeout(() => settle("abandoned"), AFTER_KILL_MS).unref();
  };
  let killing: Promise<void> | undefined;
  // setTimeout fires at once for delays past 2^31-1 ms (~24.8 days): cap instead of overflowing.
  const timer = setTimeout(
    () => {
      timedOut = true;
      flow.drain();
      killing ??= kill();
    },
    Math.min(req.timeoutMs, MAX_TIMER_MS),
  );
  const onAbort = () => {
    canceled = true;
    flow.drain();
    killing ??= kill();
  };
  if (req.signal?.aborted) onAbort();
  else req.signal?.addEventListener("abort", onAbort, { once: true });

  const poller = setInterval(async () => {
    try {
      const info = await exec.inspect();
      // Give in-flight output a moment to arrive before calling it finished; time paused for a slow
      // consumer does not count, or a finished command's last output (and marker) would be dropped.
      if (!info.Running) flow.afterFlowing(200, () => settle("inspect"));
    } catch {
      settle("inspect-failed");
    }
  }, POLL_MS);

  const how = await finished;
  clearTimeout(timer);
  clearInterval(poller);
  flow.close();
  req.signal?.removeEventListener("abort", onAbort);
  if ((how === "error" || how === "close") && !scanners.stdout.found) {
    // The connection dropped, not the command: stop it rather than leave it running unwatched.
    // Nothing more arrives, so the start line is decided now: the kill need not wait for it.
    startLine.flush();
    const running = await exec.inspect().then(
      (info) => info.Running,
      () => false,
    );
    if (running) killing ??= kill();
  }
  if (killing) await killing;
  stream.destroy();
  startLine.flush();
  scanners.stdout.flush();
  scanners.stderr.flush();

  const marker = scanners.stdout.payload;
  let exitCode: number | undefined;
  let oomKills = 0;
  let endCwd: string | undefined;
  if (marker !== undefined) {
    const [rc = "", oom = "0", ...cwdParts] = marker.split(":");
    exitCode = Number.parseInt(rc, 10);
    oomKills = Number.parseInt(oom, 10) || 0;
    endCwd = plausibleCwd(cwdParts.join(":"));
  } else {
    exitCode = await exec
      .inspect()
      .then((info) => info.ExitCode ?? undefined)
      .catch(() => undefined);
  }
  log("exec %s finished by %s exit=%s", exec.id, how, exitCode);
  return {
    stdout,
    stderr,
    exitCode: Number.isNaN(exitCode) ? undefined : exitCode,
    oomKills,
    endCwd,
    timedOut,
    canceled,
    killFailed,
    survivors,
    wrapperLost: marker === undefined,
    durationMs: Math.round(performance.now() - started),
  };
}

/**
 * Runs a short helper command and returns its stdout (stderr dropped). Rejects if it cannot run,
 * exits nonzero, or is not done within `deadlineMs` (a wedged container must not hang the caller;
 * its stream is then dropped).
 */
export async function runSimpleExec(
  container: Docker.Container,
  cmd: string[],
  user: string,
  deadlineMs = 15_000,
): Promise<string> {
  const exec = await withDeadline(
    container.exec({ Cmd: cmd, User: user, AttachStdout: true, AttachStderr: true, Tty: false }),
    deadlineMs,
    "creating a helper exec",
  );
  const stream: Duplex = await withDeadline(
    exec.start({ hijack: true, stdin: false }),
    deadlineMs,
    "starting a helper exec",
  );
  const chunks: Buffer[] = [];
  const demuxer = new Demuxer((name, payload) => {
    if (name === "stdout") chunks.push(payload);
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      timer = setTimeout(
        () => reject(new Error(`helper exec still running after ${deadlineMs} ms`)),
        deadlineMs,
      );
      stream.on("data", (chunk: Buffer) => demuxer.push(chunk));
      stream.once("end", resolve);
      stream.once("close", resolve);
      stream.once("error", reject);
    });
  } finally {
    clearTimeout(timer);
    stream.destroy();
  }
  const info = await exec.inspect();
  const out = Buffer.concat(chunks).toString("utf8");
  if (info.ExitCode !== 0) throw new Error(`helper exec exited with ${info.ExitCode}: ${out.slice(0, 200)}`);
  return out;
}

/** The killer's pid and start-time arguments; empty strings when the wrapper never said. */
function startArgs(start: WrapperStart | undefined): [string, string] {
  return start ? [String(start.pid), start.startTime] : ["", ""];
}

/** The end cwd the command's shell reported: the command controls it, so only a sane absolute path. */
function plausibleCwd(path: string): string | undefined {
  return path.startsWith("/") && path.length <= 4096 ? path : undefined;
}

/** `promise`'s value, or undefined when it has not settled after `ms`. */
async function firstOf<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Rejects when `promise` has not settled after `ms`. */
async function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
