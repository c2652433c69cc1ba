/**
 * `harness run --continue` and `--resume ID`: finds the run to go on with, checks the flags against
 * it, and rebuilds its conversation from the transcript. Everything here runs before Docker is
 * touched, so a run that cannot be found is one line and exit 2 at once.
 */
import { realpathSync } from "node:fs";
import type { CliFlags } from "../config.js";
import { ConfigError } from "../errors.js";
import type { MessageParam } from "../model/model-client.js";
import { isProcessAlive } from "../runs/run-activity.js";
import { namedRun, newestRunOfWorkspace, type RunToContinue } from "../runs/run-to-continue.js";
import { pidOfRunId, runsDir } from "../runs/state-paths.js";
import { readConversation } from "../transcript/read-conversation.js";

/** The flags of `harness run` this file reads. */
export interface ContinueFlags extends CliFlags {
  /** `--continue`: the newest run of this workspace. */
  continue?: boolean;
  /** `--resume ID`: a run id, a unique prefix of one, or a transcript path. */
  resume?: string;
  /** `--fork RUN@N`: a new run from step N of RUN (cli/fork-run.ts). */
  fork?: string;
  /** `--no-checkpoints` gives false. */
  checkpoints?: boolean;
}

/** A past run to go on with. */
export interface ContinuedRun extends RunToContinue {
  /** Its workspace (a real host path), when the transcript records one. */
  workspace?: string;
  /** The conversation so far, valid for the next request. */
  messages: MessageParam[];
  /** Tool calls cut off without a result, now answered as not completed. */
  incompleteCalls: number;
  /** The highest `out-N` id the conversation names (0: none): new saved outputs get higher ones. */
  highestOutputId: number;
}

export interface ContinueOptions {
  /** Env for HARNESS_WORKSPACE and the state directory. */
  env: NodeJS.ProcessEnv;
  /** Process check, for tests. */
  isAlive?: (pid: number) => boolean;
  /** This process's pid (a transcript this process has open is not "open elsewhere"). */
  ownPid?: number;
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
    const workspace = realWorkspace(flags.workspace ?? env["HARNESS_WORKSPACE"] ?? process.cwd());
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
  const conversation = await readConversation(found.transcriptPath);
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
  const run: ContinuedRun = {
    ...found,
    messages: conversation.messages,
    incompleteCalls: conversation.incompleteCalls.length,
    highestOutputId: highestOutputId(conversation.messages),
  };
  if (recorded !== undefined) run.workspace = recorded;
  return run;
}

function realWorkspace(given: string): string {
  try {
    return realpathSync(given);
  } catch {
    throw new ConfigError(`workspace '${given}' does not exist`);
  }
}

/**
 * The highest `out-N` any tool result names. A command's own output may mention such a name too;
 * counting it only skips ids, which costs nothing.
 */
function highestOutputId(messages: readonly MessageParam[]): number {
  let highest = 0;
  for (const message of messages) {
    if (message.role !== "user" || typeof message.content === "string") continue;
    for (const block of message.content) {
      if (block.type !== "tool_result") continue;
      const text = typeof block.content === "string" ? block.content : JSON.stringify(block.content ?? "");
      for (const match of text.matchAll(/\bout-(\d{1,9})\b/g)) highest = Math.max(highest, Number(match[1]));
    }
  }
  return highest;
}
