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
import { EXEC_TAG_VAR, KILL_SCRIPT, MARKER_LEAD, WRAPPER_SCRIPT } from "./exec-scripts.js";
import { OutputBuffer } from "./output-buffer.js";

const log = createDebug("harness:exec");

export interface ExecRequest {
  command: string;
  /** "uid:gid" the command runs as. */
  user: string;
  /** The workspace path in the container: start dir, and fallback when the saved cwd is gone. */
  workdir: string;
  /** Start in `workdir`, ignoring the cwd the previous command left (first command of a session). */
  fresh: boolean;
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  onOutput?: ((stream: StreamName, chunk: Buffer) => void) | undefined;
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

export async function runDockerExec(container: Docker.Container, req: ExecRequest): Promise<ExecOutcome> {
  const started = performance.now();
  const nonce = randomBytes(8).toString("hex");
  const stdout = new OutputBuffer(req.headBytes, req.tailBytes);
  const stderr = new OutputBuffer(req.headBytes, req.tailBytes);
  const buffers = { stdout, stderr };
  const forward = (name: StreamName) => (chunk: Buffer) => {
    buffers[name].write(chunk);
    try {
      req.onOutput?.(name, chunk);
    } catch (error) {
      // A display or saving callback must not take the exec (or the process) down with it.
      log("onOutput failed: %s", (error as Error).message);
    }
  };
  const scanners = {
    stdout: new EndMarkerScanner(`${MARKER_LEAD}${nonce}:`, forward("stdout")),
    stderr: new EndMarkerScanner(`${MARKER_LEAD}${nonce}`, forward("stderr")),
  };

  // A wedged engine may never answer create or start; the caller treats a rejection here as "not
  // started" and restarts the container. Timeout and abort only apply once the command runs.
  const exec = await withDeadline(
    container.exec({
      Cmd: [
        "/bin/sh",
        "-c",
        WRAPPER_SCRIPT,
        "harness-exec",
        nonce,
        req.workdir,
        req.command,
        req.fresh ? "fresh" : "",
      ],
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
  const demuxer = new Demuxer((name, payload) => scanners[name].push(payload));

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
      const out = await runSimpleExec(
        container,
        ["/bin/sh", "-c", KILL_SCRIPT, "harness-kill", nonce, String(req.killGraceSeconds)],
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
      killing ??= kill();
    },
    Math.min(req.timeoutMs, MAX_TIMER_MS),
  );
  const onAbort = () => {
    canceled = true;
    killing ??= kill();
  };
  if (req.signal?.aborted) onAbort();
  else req.signal?.addEventListener("abort", onAbort, { once: true });

  const poller = setInterval(async () => {
    try {
      const info = await exec.inspect();
      // Give in-flight output a moment to arrive before calling it finished.
      if (!info.Running) setTimeout(() => settle("inspect"), 200).unref();
    } catch {
      settle("inspect-failed");
    }
  }, POLL_MS);

  const how = await finished;
  clearTimeout(timer);
  clearInterval(poller);
  req.signal?.removeEventListener("abort", onAbort);
  if ((how === "error" || how === "close") && !scanners.stdout.found) {
    // The connection dropped, not the command: stop it rather than leave it running unwatched.
    const running = await exec.inspect().then(
      (info) => info.Running,
      () => false,
    );
    if (running) killing ??= kill();
  }
  if (killing) await killing;
  stream.destroy();
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
    endCwd = cwdParts.join(":") || undefined;
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
