/**
 * `harness run --continue` and `--resume ID`: finds the run to go on with, checks the flags against
 * it, and rebuilds its conversation from the transcript. Everything here runs before Docker is
 * touched, so a run that cannot be found is one line and exit 2 at once.
 */
import { lstatSync, realpathSync, type Stats } from "node:fs";
import { isAbsolute, relative } from "node:path";
import type { CliFlags } from "../../config.js";
import { ConfigError } from "../../errors.js";
import type { MessageParam } from "../../model/model-client.js";
import { isProcessAlive } from "../../runs/run-activity.js";
import { namedRun, newestRunOfWorkspace, type RunToContinue } from "../../runs/run-to-continue.js";
import { readSettings } from "../../settings/read-setting.js";
import { managedRunIdOf, pidOfRunId, runsDir } from "../../state/run-layout.js";
import { readConversation } from "../../transcript/read-conversation.js";
import { checkRebuiltConversation } from "./rebuilt-conversation.js";

/** The flags of `harness run` this file reads. */
export interface ContinueFlags extends CliFlags {
  /** `--continue`: the newest run of this workspace. */
  continue?: boolean;
  /** `--resume ID`: a run id, a unique prefix of one, or a transcript path. */
  resume?: string;
  /** `--fork RUN@N`: a new run from step N of RUN (cli/runs/fork-run.ts). */
  fork?: string;
  /** `--no-checkpoints` gives false, `--checkpoints all` "all". */
  checkpoints?: boolean | "all";
}

/** A past run to go on with. */
export interface ContinuedRun extends RunToContinue {
  /**
   * The workspace the continued run uses (a real host path): the one the transcript records, else
   * (an old transcript) the one named as for a new run.
   */
  workspace: string;
  /** The conversation so far, valid for the next request. */
  messages: MessageParam[];
  /** Tool calls cut off without a result, now answered as not completed. */
  incompleteCalls: number;
  /** The highest `out-N` id the conversation names (0: none): new saved outputs get higher ones. */
  highestOutputId: number;
  /** What the rebuild left out, one line each (rebuilt-conversation.ts). */
  notes: string[];
}

export interface ContinueOptions {
  /** Env for the workspace setting and the state directory. */
  env: NodeJS.ProcessEnv;
  /** Process check, for tests. */
  isAlive?: (pid: number) => boolean;
  /** This process's pid (a transcript this process has open is not "open elsewhere"). */
  ownPid?: number;
  /** The continuing run has thinking off (`--thinking off`): no thinking is sent back. */
  thinkingOff?: boolean;
}

/** The run `--continue` / `--resume` names, or undefined when neither was given. Throws `ConfigError`. */
export async function loadContinuedRun(
  flags: ContinueFlags,
  options: ContinueOptions,
): Promise<ContinuedRun | undefined> {
  const { env } = options;
  const resume = flags.resume;
  if (!flags.continue && resume === undefined) return undefined;
  if (flags.continue && resume !== undefined)
    throw new ConfigError("--continue and --resume cannot be used together: give one");
  const flag = flags.continue ? "--continue" : "--resume";
  if (flags.transcript !== undefined)
    throw new ConfigError(
      `--transcript cannot be used with ${flag}: the continued run is appended to its own transcript`,
    );
  const dir = runsDir(env);
  let found: RunToContinue;
  if (resume === undefined) {
    const workspace = realWorkspace(readSettings(flags, env).text("workspace") ?? process.cwd());
    const newest = newestRunOfWorkspace(dir, workspace, env);
    if (newest === undefined)
      throw new ConfigError(
        `--continue: no run of workspace ${workspace} in ${dir} (harness runs lists runs)`,
      );
    found = newest;
  } else {
    try {
      found = namedRun(dir, resume);
    } catch (error) {
      if (error instanceof ConfigError)
        throw new ConfigError(`--resume: ${error.message}; runs directory: ${dir}`);
      throw error;
    }
  }
  checkTranscriptFile(found.transcriptPath, flag);
  const thinkingOff = options.thinkingOff === true;
  const conversation = await readConversation(found.transcriptPath, undefined, { dropThinking: thinkingOff });
  if (conversation.mcpSession)
    throw new ConfigError(
      `${flag}: run ${found.id} is an MCP session: its tool calls came from an MCP client, whose own model holds the conversation, so harness has none to continue; start a new run (without ${flag}) on the workspace as the session left it, or resume an agent run (harness runs lists them)`,
    );
  // A transcript written before run_start recorded its pid is one process's: the id's.
  const pid = conversation.pid ?? pidOfRunId(found.id);
  if (
    pid !== undefined &&
    pid !== (options.ownPid ?? process.pid) &&
    (options.isAlive ?? isProcessAlive)(pid)
  )
    throw new ConfigError(
      `run ${found.id} is still open in harness process ${pid}: end that one first (two runs cannot write one transcript)`,
    );
  const recorded = conversation.workspace;
  if (flags.workspace !== undefined && recorded !== undefined && realWorkspace(flags.workspace) !== recorded)
    throw new ConfigError(
      `--workspace ${flags.workspace} is not the workspace of run ${found.id} (${recorded}); leave --workspace out to continue it there`,
    );
  if (flags.workspace === undefined && recorded !== undefined) {
    const doubt = untrustedRecord(found.transcriptPath, dir, recorded);
    if (doubt !== undefined)
      throw new ConfigError(
        `${resume === undefined ? flag : `${flag} ${resume}`}: ${doubt}, so what it records may not be what harness wrote: it records workspace ${recorded}; check that and give --workspace ${recorded} to continue there`,
      );
  }
  const notes = checkRebuiltConversation(conversation, flag, found.id, thinkingOff);
  return {
    ...found,
    workspace: recorded ?? realWorkspace(readSettings(flags, env).text("workspace") ?? process.cwd()),
    messages: conversation.messages,
    incompleteCalls: conversation.incompleteCalls.length,
    highestOutputId: conversation.highestOutputId,
    notes,
  };
}

/**
 * Why the workspace a transcript records cannot be taken on its word, or undefined when it can. Only
 * a transcript in harness's runs directory (outside every workspace) was surely written by harness
 * alone: one elsewhere (`--resume PATH` of a `--transcript` file) may lie in a directory some
 * sandbox could write (harness cannot know every workspace of every past run), where a task can
 * rewrite it to send the continued run into another directory. Neither can one inside the workspace
 * it records (a state directory kept in the workspace). Then the user names the workspace.
 */
function untrustedRecord(transcriptPath: string, dir: string, recorded: string): string | undefined {
  const real = realOrSelf(transcriptPath);
  const inside = relative(recorded, real);
  if (inside !== "" && !inside.startsWith("..") && !isAbsolute(inside))
    return "the transcript lies inside the workspace it records, where the sandbox could rewrite it";
  if (managedRunIdOf(transcriptPath, dir) === undefined)
    return `the transcript is not in harness's runs directory (${dir})`;
  return undefined;
}

/**
 * A transcript to continue must be a file harness could append to (host-files/host-file.ts): never
 * a link, a fifo, a file with another name. Checked before it is read, so that nothing it leads to
 * is sent to the model as the conversation.
 */
function checkTranscriptFile(path: string, flag: string): void {
  let info: Stats;
  try {
    info = lstatSync(path);
  } catch (error) {
    throw new ConfigError(`${flag}: cannot read transcript ${path}: ${(error as Error).message}`);
  }
  const why = info.isSymbolicLink()
    ? "is a symlink: give the transcript itself"
    : !info.isFile()
      ? "is not a regular file"
      : info.nlink > 1
        ? `has ${info.nlink} hard links (one may lead anywhere)`
        : undefined;
  if (why !== undefined) throw new ConfigError(`${flag}: transcript ${path} ${why}`);
}

function realOrSelf(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

function realWorkspace(given: string): string {
  try {
    return realpathSync(given);
  } catch {
    throw new ConfigError(`workspace '${given}' does not exist`);
  }
}
