/**
 * One command through the Docker Engine exec API, from create to a decided outcome. The steps live
 * beside it: starting under a deadline (`exec-start.ts`), reading the attach stream
 * (`exec-output.ts`), deciding when the command is over (`exec-completion.ts`), killing it on timeout
 * or cancel (`exec-kill.ts`), and reading how it ended (`exec-end-report.ts`).
 */
import { randomBytes } from "node:crypto";
import createDebug from "debug";
import type Docker from "dockerode";
import { type BackgroundProcess, listBackgroundProcesses } from "../exec/background-processes.js";
import type { StreamName } from "../exec/demux.js";
import { armKill, ExecKill } from "../exec/exec-kill.js";
import { EXEC_TAG_VAR } from "../exec/exec-scripts.js";
import { startExec } from "../exec/exec-start.js";
import type { OutputBuffer } from "../exec/output-buffer.js";
import { connectionLost, watchCompletion } from "./exec-completion.js";
import { readCommandEnd } from "./exec-end-report.js";
import { AttachStreamOutput } from "./exec-output.js";
import { wrapperCommand } from "./wrapper-script.js";

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
  /** `KEY=value` entries added to the command's environment (allowlist mode's proxy variables). */
  env?: readonly string[] | undefined;
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
  /** How many processes the wrapper's end marker says still run in the background (0 without a marker). */
  backgroundCount: number;
  /** Those jobs as the engine lists them (`docker top`), asked only when the count is nonzero. */
  background: BackgroundProcess[];
  durationMs: number;
}

/** How long creating and starting an exec may take before the engine counts as wedged. */
const START_DEADLINE_MS = 30_000;

/**
 * Runs `req.command` in the wrapper. Rejects only when the exec could not be created or started (the
 * caller restarts the container); everything the command does is in the outcome.
 */
export async function runDockerExec(container: Docker.Container, req: ExecRequest): Promise<ExecOutcome> {
  const started = performance.now();
  const nonce = randomBytes(8).toString("hex");
  const output = new AttachStreamOutput(nonce, req);
  const { exec, stream } = await startExec(
    container,
    wrapperExec(req, nonce),
    req.startDeadlineMs ?? START_DEADLINE_MS,
    "the exec",
  );
  output.flow.attach(stream);
  const watch = watchCompletion(exec, stream, output);
  const kill = new ExecKill(
    container,
    {
      execId: exec.id,
      nonce,
      startLine: output.startLine,
      user: req.user,
      killGraceSeconds: req.killGraceSeconds,
    },
    watch.settle,
  );
  let timedOut = false;
  let canceled = false;
  const disarm = armKill(req.timeoutMs, req.signal, (cause) => {
    if (cause === "timeout") timedOut = true;
    else canceled = true;
    output.flow.drain();
    kill.start();
  });

  const reason = await watch.finished;
  disarm();
  watch.stop();
  output.flow.close();
  if (connectionLost(reason) && output.endReport === undefined) await killIfRunning(exec, output, kill);
  await kill.done();
  stream.destroy();
  output.flush();

  const end = await readCommandEnd(output.endReport, exec);
  log("exec %s finished by %s exit=%s", exec.id, reason, end.exitCode);
  const durationMs = Math.round(performance.now() - started);
  // The count is the command's to fake; it only decides whether to look (30-100 ms), not what is listed.
  const background = end.backgroundCount > 0 ? await listBackgroundProcesses(container) : [];
  return {
    stdout: output.stdout,
    stderr: output.stderr,
    ...end,
    timedOut,
    canceled,
    killFailed: kill.failed,
    survivors: kill.survivors,
    background,
    durationMs,
  };
}

/** The command's exec: the wrapper, with the command and the start directory as arguments. */
function wrapperExec(req: ExecRequest, nonce: string): Docker.ExecCreateOptions {
  return {
    Cmd: wrapperCommand(nonce, req.workdir, req.command, req.startDir),
    // The tag last: nothing passed in can replace it.
    Env: [...(req.env ?? []), `${EXEC_TAG_VAR}=${nonce}`],
    User: req.user,
    WorkingDir: req.workdir,
    AttachStdin: false,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
  };
}

/** The connection dropped, not the command: stop it rather than leave it running unwatched. */
async function killIfRunning(exec: Docker.Exec, output: AttachStreamOutput, kill: ExecKill): Promise<void> {
  // Nothing more arrives, so the start line is decided now: the kill need not wait for it.
  output.startLine.flush();
  const running = await exec.inspect().then(
    (info) => info.Running,
    () => false,
  );
  if (running) kill.start();
}
