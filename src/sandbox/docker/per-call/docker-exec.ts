/**
 * One command through the Docker Engine exec API, from create to a decided outcome. The steps live
 * beside it: starting under a deadline (`exec-start.ts`), reading the attach stream
 * (`exec-output.ts`), deciding when the command is over (`exec-completion.ts`), killing it on timeout
 * or cancel (`exec-kill.ts`), and reading how it ended (`exec-end-report.ts`).
 */
import { randomBytes } from "node:crypto";
import createDebug from "debug";
import type Docker from "dockerode";
import { armKill } from "../../exec/arm-kill.js";
import { EXEC_TAG_VAR } from "../../exec/exec-scripts.js";
import type { ExecOutcome, ExecRequest } from "../../exec/exec-types.js";
import { listBackgroundProcesses } from "../exec/background-processes.js";
import { ExecKill } from "../exec/exec-kill.js";
import { startExec } from "../exec/exec-start.js";
import { connectionLost, watchCompletion } from "./exec-completion.js";
import { readCommandEnd } from "./exec-end-report.js";
import { AttachStreamOutput } from "./exec-output.js";
import { wrapperCommand } from "./wrapper-script.js";

const log = createDebug("harness:exec");

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
