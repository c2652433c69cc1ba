/** Opens the workspace's sandbox with the CLI's settings; build progress goes to stderr. */
import type { SandboxConfig } from "../../config.js";
import { CanceledError } from "../../errors.js";
import { recoverApplies } from "../../sandbox/copy/journal/apply-commit.js";
import { DockerSandbox } from "../../sandbox/docker/docker-sandbox.js";
import type { KubernetesSandbox } from "../../sandbox/kubernetes/kubernetes-sandbox.js";
import type { PublishMonitor } from "../../sandbox/sandbox.js";
import { newRunId } from "../../state/run-layout.js";
import { sanitizeForTerminal } from "../../terminal/sanitize.js";
import type { PostCreateRun } from "../../transcript/transcript-records.js";
import { watchEnvFiles } from "../dotenv/env-file-watch.js";
import type { SessionEnd } from "../session/session-end.js";

export interface OpenSandboxOptions {
  /**
   * The process's session end: the sandbox's stop is held there from the moment its open starts, so
   * that every way the session ends stops it (session/session-end.ts); a session already ending opens none.
   */
  session: Pick<SessionEnd, "hold" | "signal">;
  removeOnStop?: boolean;
  /**
   * Copy mode: the copy outlives the session until its changes land or are dropped, under this id
   * (the run's, or `newCopyId`'s) and the command's name; the review settles it (copy-changes.ts).
   */
  keepCopyAs?: { id: string; command: string };
  progress?: (line: string) => void;
  /** Kubernetes: the pod the batch's warm pool made for this sandbox. */
  warmPod?: string | undefined;
}

/** The id a kept copy of `exec`, `shell` or `mcp` gets (a run's copy takes the run's id). */
export function newCopyId(command: string): string {
  return `${command}-${newRunId()}`;
}

export async function openSandbox(
  config: SandboxConfig,
  options: OpenSandboxOptions,
): Promise<DockerSandbox | KubernetesSandbox> {
  const { session } = options;
  if (session.signal.aborted) throw new CanceledError("the session ended before the sandbox opened");
  // The lines name what the sandbox made (the git warning, setuid files): shown, never obeyed.
  const say =
    options.progress ??
    ((line: string) => process.stderr.write(`harness: ${sanitizeForTerminal(line, { oneLine: true })}\n`));
  // A copy-mode apply to this workspace that was killed is finished (or undone) before anything reads it.
  for (const { line } of await recoverApplies(process.env, config.workspace)) say(line);
  // Every sandbox, whatever the command: what it could write includes a `.env` harness loads later.
  const watch = watchEnvFiles(config.workspace);
  // What devcontainer.json asked for and did not get: said when its container is made (or when the
  // open fails), not again on every command that reuses it.
  const ignored = config.devcontainer?.ignored ?? [];
  const opening = openEngineSandbox(config, options, say).then((sandbox) => ({
    sandbox,
    ownStop: sandbox.stop.bind(sandbox),
  }));
  // Once, whoever asks first: the command's own end (`await using`), or a forced one. A forced end
  // during the open waits for it, so no container it made is left running unstopped. The watch ends
  // only once the sandbox has stopped: its leftover processes ended, copy mode's changes applied or dropped.
  const { end: stop } = session.hold("stopping the sandbox", async () => {
    try {
      const opened = await opening.catch(() => undefined);
      await opened?.ownStop();
    } finally {
      for (const line of watch.close()) say(line);
    }
  });
  let sandbox: DockerSandbox | KubernetesSandbox;
  try {
    ({ sandbox } = await opening);
  } catch (error) {
    for (const line of ignored) say(line);
    await stop();
    throw error;
  }
  sandbox.stop = stop;
  if ("acquired" in sandbox && sandbox.acquired === "created") for (const line of ignored) say(line);
  for (const line of postCreateLines(sandbox)) say(line);
  for (const { port, hostPort } of sandbox.published?.ports ?? []) {
    // Publishing adds no interface; whether the sandbox has a network is --network's doing.
    const network = config.network === "none" ? " (the sandbox still has no network)" : "";
    say(`sandbox port ${port} published at 127.0.0.1:${hostPort}${network}`);
  }
  if (sandbox.published !== undefined) sayUnreachedPorts(sandbox.published, say);
  return sandbox;
}

async function openEngineSandbox(
  config: SandboxConfig,
  options: OpenSandboxOptions,
  say: (line: string) => void,
): Promise<DockerSandbox | KubernetesSandbox> {
  if (config.engine === "kubernetes") {
    // Loaded only here: the Kubernetes client costs a Docker run about 0.3 s of start-up.
    const { KubernetesSandbox } = await import("../../sandbox/kubernetes/kubernetes-sandbox.js");
    // Kept for the next session as Docker keeps a container; a batch's tasks and a replay are not.
    const keepPod = options.removeOnStop !== true && options.warmPod === undefined;
    return KubernetesSandbox.open({ ...config, warmPod: options.warmPod, keepPod, onProgress: say });
  }
  return DockerSandbox.open({
    ...config,
    removeOnStop: options.removeOnStop,
    keepCopy: options.keepCopyAs,
    onProgress: say,
  });
}

/** The postCreateCommand this open ran, as the transcript's first run_start records it. */
export function postCreateRun(
  sandbox: Pick<DockerSandbox, "postCreate" | "resolvedSettings"> | KubernetesSandbox,
): PostCreateRun | undefined {
  if (!("postCreate" in sandbox) || sandbox.postCreate === undefined) return undefined;
  const { command, result } = sandbox.postCreate;
  return {
    command,
    user: sandbox.resolvedSettings.user,
    stdout: result.stdout,
    stderr: result.stderr,
    exitCode: result.exitCode ?? null,
    durationMs: result.durationMs,
    timedOut: result.timedOut,
  };
}

/** What devcontainer.json's postCreateCommand did, when this open ran it: the command, its end, its output's tail. */
export function postCreateLines(
  sandbox: Pick<DockerSandbox, "postCreate" | "resolvedSettings"> | KubernetesSandbox,
): string[] {
  // A pod runs no postCreateCommand: --devcontainer is refused on --engine kubernetes.
  if (!("postCreate" in sandbox) || sandbox.postCreate === undefined) return [];
  const { command, result, again } = sandbox.postCreate;
  const failed = result.timedOut || result.exitCode !== 0;
  const end = result.timedOut
    ? "timed out"
    : result.exitCode === 0
      ? "done"
      : `failed (exit ${result.exitCode})`;
  const retry = failed
    ? " (it runs again with the next command here until it succeeds; a changed devcontainer.json makes a new container)"
    : "";
  const lines = [
    `devcontainer postCreateCommand ran${again ? " again (it failed before)" : ""} as ${sandbox.resolvedSettings.user}: ${command}: ${end}${retry}`,
  ];
  for (const stream of [result.stdout, result.stderr]) {
    for (const line of stream.trimEnd().split("\n").slice(-10)) if (line !== "") lines.push(`  ${line}`);
  }
  for (const notice of result.notices) lines.push(notice);
  return lines;
}

/**
 * One line per published port when a connection to it found nothing listening in the sandbox (the
 * client saw the connection reset), once until a connection gets through again: a browser retries.
 */
function sayUnreachedPorts(published: PublishMonitor, say: (line: string) => void): void {
  const unreached = new Set<number>();
  published.subscribe((record) => {
    if (record.error === undefined) {
      unreached.delete(record.port);
      return;
    }
    if (unreached.has(record.port)) return;
    unreached.add(record.port);
    // port-forward.py says "127.0.0.1:PORT: Connection refused" when nothing listens there.
    const advice = /refused/i.test(record.error)
      ? `: start the server on the sandbox's 127.0.0.1:${record.port} and keep it running (harness exec: give it --timeout SECONDS as long as it should serve; run and mcp: start it in the background with &)`
      : "";
    say(
      `published port ${record.port} (127.0.0.1:${record.hostPort}): a connection could not be forwarded: ${record.error}${advice}`,
    );
  });
}
