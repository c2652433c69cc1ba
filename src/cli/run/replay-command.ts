/**
 * `harness replay TRANSCRIPT|RUN`: re-runs a transcript's recorded bash calls in a fresh, throwaway
 * sandbox, without a model, and reports whether each reproduced. Exit 0 when all did, 5 when one
 * diverged, 2 when the transcript cannot be read.
 */
import { existsSync } from "node:fs";
import { chown, mkdtemp, realpath, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import type { Manifest } from "../../checkpoints/checkpoint-types.js";
import { prepareTarget } from "../../checkpoints/restore.js";
import { type CliFlags, loadSandboxConfig, type SandboxConfig } from "../../config.js";
import { ConfigError } from "../../errors.js";
import { formatCall, formatSummary, reportToJson } from "../../replay/format-report.js";
import { readTranscript } from "../../replay/read-transcript.js";
import { type ReplayReport, replayCalls } from "../../replay/replay.js";
import { namedRun } from "../../runs/run-to-continue.js";
import {
  listHarnessContainers,
  removeHarnessContainers,
} from "../../sandbox/docker/container/container-registry.js";
import { connectDocker } from "../../sandbox/docker/engine/docker-client.js";
import { parseUserIds } from "../../sandbox/sandbox-user.js";
import { runsDir, TRANSCRIPT_SUFFIX } from "../../state/run-layout.js";
import { sanitizeForTerminal } from "../../terminal/sanitize.js";
import type { RunStartEgress } from "../../transcript/transcript-records.js";
import { EXIT } from "../exit-codes.js";
import { checkpointOf, ownerOf } from "../runs/fork-run.js";
import { restoreCheckpoint } from "../runs/restore-checkpoint.js";
import type { Interrupts } from "../session/interrupts.js";
import type { SessionEnd } from "../session/session-end.js";
import { openSandbox } from "../setup/sandbox-from-config.js";

/** `replay`'s flags besides the sandbox ones. */
export interface ReplayFlags extends CliFlags {
  /** Compare exit codes only. */
  ignoreOutput?: boolean;
  /** Keep the temporary workspace (when no --workspace was given). */
  keep?: boolean;
  /** "text" (default) or "json". */
  outputFormat?: string;
  /** `--from N`: replay the calls after step N, in checkpoint N restored. */
  from?: string;
}

/** Owner of a temporary workspace when harness runs as root: it refuses root-owned workspaces. */
const DEFAULT_OWNER = { uid: 1000, gid: 1000 };

export async function replayCommand(
  run: string,
  flags: ReplayFlags,
  interrupts: Interrupts,
): Promise<number> {
  const signal = interrupts.begin();
  // A path (or a file that exists) is the transcript; anything else names a past run (`last`, an id).
  const isPath = run.includes("/") || run.endsWith(TRANSCRIPT_SUFFIX) || existsSync(run);
  const path = isPath ? run : namedRun(runsDir(process.env), run).transcriptPath;
  const transcript = await readTranscript(path);
  missingSecrets(transcript.egress?.secrets ?? [], flags, process.env);
  const from = startingCheckpoint(path, flags.from);
  // A workspace given with --from receives the checkpoint: it must be new or empty, so it is made now.
  if (from !== undefined && flags.workspace !== undefined) await prepareOrRefuse(resolve(flags.workspace));
  // Flags are checked before anything is created.
  const checked = loadSandboxConfig(
    process.env,
    { ...flags, workspace: flags.workspace ?? "." },
    { inheritEgress: transcript.egress },
  );
  const egressNote = egressNotice(transcript.egress, checked);
  if (egressNote !== undefined)
    process.stderr.write(`harness: ${sanitizeForTerminal(egressNote, { oneLine: true })}\n`);
  const temporary = flags.workspace === undefined;
  const workspace = temporary ? await makeTemporaryWorkspace(checked.user) : checked.workspace;
  if (from !== undefined) {
    const owner = temporary ? await stat(workspace) : await ownerOf(undefined, dirname(workspace));
    const { lines } = await restoreCheckpoint(path, from, workspace, owner);
    for (const line of lines)
      process.stderr.write(`harness: ${sanitizeForTerminal(line, { oneLine: true })}\n`);
  }
  const calls = from === undefined ? transcript.calls : transcript.calls.filter((call) => call.n > from.step);
  const json = flags.outputFormat === "json";
  // Text lines quote the transcript and the sandbox: shown as escapes. The JSON report is written as
  // it is (format-report.ts makes its text safe already).
  const out = (line: string) => process.stdout.write(`${json ? line : sanitizeForTerminal(line)}\n`);
  const ran = calls.filter((call) => call.kind === "ran").length;
  const after = from === undefined ? "" : ` after step ${from.step} (its checkpoint restored)`;
  process.stderr.write(
    `harness: ${sanitizeForTerminal(`replaying ${ran} of ${calls.length} tool calls${after} from ${path} in ${workspace}`, { oneLine: true })}\n`,
  );
  let report: ReplayReport;
  try {
    report = await replayIn({ ...checked, workspace }, temporary, interrupts.session, async (sandbox) =>
      replayCalls(calls, sandbox, {
        // The recording's own default timeout, unless --timeout says otherwise.
        timeoutMs:
          flags.timeout === undefined
            ? (transcript.commandTimeoutMs ?? checked.timeoutMs)
            : checked.timeoutMs,
        signal,
        ignoreOutput: flags.ignoreOutput === true,
        ...(json ? {} : { onCall: (call) => formatCall(call).forEach(out) }),
      }),
    );
  } finally {
    if (temporary && !flags.keep) await rm(workspace, { recursive: true, force: true });
  }
  const kept = !temporary || flags.keep === true;
  if (json) {
    const context = {
      transcript: path,
      workspace,
      workspaceKept: kept,
      ignoreOutput: flags.ignoreOutput === true,
    };
    out(JSON.stringify(reportToJson(report, context)));
  } else {
    out(formatSummary(report));
    out(`workspace: ${workspace}${kept ? "" : " (temporary, removed; --keep keeps it)"}`);
  }
  if (report.interrupted) return EXIT.interrupted;
  return report.reproduced ? EXIT.ok : EXIT.diverged;
}

/** `--from N`: the step and its checkpoint, from the run's checkpoints beside the transcript. */
function startingCheckpoint(
  path: string,
  text: string | undefined,
): { step: number; manifest: Manifest } | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text)) throw new ConfigError(`--from must be a step number (0, 1, 2, …), got '${text}'`);
  const step = Number(text);
  const run = { id: basename(path, ".jsonl"), transcriptPath: path };
  return { step, manifest: checkpointOf(run, step, "--from") };
}

async function prepareOrRefuse(dir: string): Promise<void> {
  try {
    await prepareTarget(dir);
  } catch (error) {
    throw new ConfigError(`--from: ${(error as Error).message}`);
  }
}

/**
 * What the user must know about the replay's network when the recording had allowlist mode: the
 * same list is used (unless flags gave one), and `--allow-private` is never taken from a file.
 */
export function egressNotice(
  recorded: RunStartEgress | undefined,
  config: SandboxConfig,
): string | undefined {
  if (recorded === undefined) return undefined;
  const list = recorded.allowHosts.join(", ");
  if (config.egress?.inherited !== true) {
    const now = config.egress === undefined ? `network ${config.network}` : "the allowlist the flags give";
    return `the recording allowed ${list} through the gateway; this replay uses ${now} instead`;
  }
  const privateNote =
    recorded.allowPrivate && !config.egress?.allowPrivate
      ? "; the recording also allowed private addresses: pass --allow-private to allow them again"
      : "";
  return `replaying with the recording's allowlist: ${list}${privateNote}`;
}

/** Runs `work` in a new sandbox for `config.workspace` that is removed afterwards. */
async function replayIn<T>(
  config: SandboxConfig,
  temporary: boolean,
  session: SessionEnd,
  work: (sandbox: Awaited<ReturnType<typeof openSandbox>>) => Promise<T>,
): Promise<T> {
  if (!temporary) await removeExistingContainers(config.workspace, config.dockerContext);
  await using sandbox = await openSandbox(config, { session, removeOnStop: true });
  // Awaited here: a bare `return work(…)` would dispose of (remove) the sandbox while it still runs.
  return await work(sandbox);
}

/**
 * A workspace's container is long-lived and would be reused, with whatever earlier runs left in its
 * /tmp and home; a replay must start from a new one. The next `harness run` recreates it.
 */
async function removeExistingContainers(workspace: string, context: string | undefined): Promise<void> {
  const resolved = await realpath(workspace).catch(() => undefined);
  if (resolved === undefined) return; // opening the sandbox reports the missing workspace
  const docker = await connectDocker(process.env, context);
  const removed = await removeHarnessContainers(docker, await listHarnessContainers(docker, resolved));
  for (const c of removed)
    process.stderr.write(
      `harness: removed the workspace's container ${sanitizeForTerminal(c.id, { oneLine: true })} so the replay starts fresh\n`,
    );
}

async function makeTemporaryWorkspace(user: string | undefined): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "harness-replay-"));
  if (process.getuid?.() === 0) {
    // The sandbox runs as the workspace owner unless --user says otherwise: make them the same.
    const { uid, gid } = user === undefined ? DEFAULT_OWNER : parseUserIds(user);
    await chown(dir, uid, gid);
  }
  return dir;
}

/**
 * A recording names the secrets its run used, never their values: replay has none of them until the
 * flags are given again (the value read from this environment, as in the run).
 */
function missingSecrets(recorded: readonly string[], flags: CliFlags, env: NodeJS.ProcessEnv): void {
  const texts = flags.secret ?? (env["HARNESS_SECRETS"] ?? "").split(/\s+/);
  const given = new Set(texts.map((text) => text.split("@")[0] ?? ""));
  const missing = recorded.filter((text) => !given.has(text.split("@")[0] ?? ""));
  if (missing.length === 0) return;
  throw new ConfigError(
    `the recorded run used ${missing.map((m) => `--secret ${m}`).join(", ")}; a transcript never holds a secret's value: pass ${missing.length === 1 ? "that flag" : "those flags"} again (with the variable set) to replay it`,
  );
}
