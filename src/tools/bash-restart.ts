/**
 * The bash tool's `restart` (Anthropic's `bash_20250124` schema): each call already runs in a new
 * shell, so what a restart can still reset is what earlier calls left behind: every process of the
 * sandbox user still running (background jobs, servers) is killed, and the working directory goes
 * back to the workspace. The answer says what was killed.
 */
import type { BackgroundProcess, ExecOptions, ExecResult, Sandbox } from "../sandbox/sandbox.js";
import { visibleControls } from "../text/visible-controls.js";
import { formatExecResult } from "./format-exec-result.js";
import { shellQuote } from "./shell-quote.js";
import type { ToolOutput } from "./tool.js";

/** Jobs named in the answer, at most this many; the rest are counted. */
const MAX_NAMED = 5;

export async function restartShell(sandbox: Sandbox, options: ExecOptions): Promise<ToolOutput> {
  // A no-op first: the sandbox lists what still runs in the background after a command.
  const before = await sandbox.exec("true", options);
  if (before.failed) return failure(before);
  // kill(-1) reaches every process this user may signal but the caller itself (Linux); the machinery
  // runs as another user and is out of its reach.
  const reset = await sandbox.exec(
    `cd -- ${shellQuote(sandbox.workdir)} && { kill -KILL -1 2>/dev/null; true; }`,
    options,
  );
  if (reset.failed) return failure(reset);
  const killed = before.background ?? [];
  return {
    content: `The shell was restarted: ${killedText(killed)}; the working directory is ${sandbox.workdir} again. (Every call runs in a new shell, so variables and functions set by earlier calls were gone already.)`,
    isError: false,
    exec: reset,
  };
}

function killedText(jobs: readonly BackgroundProcess[]): string {
  if (jobs.length === 0) return "no background process was running";
  const named = jobs.slice(0, MAX_NAMED).map((job) => `\`${visibleControls(job.command)}\``);
  const more = jobs.length - named.length;
  return `${jobs.length} background process${jobs.length === 1 ? " was" : "es were"} killed (${named.join(", ")}${more > 0 ? `, and ${more} more` : ""})`;
}

function failure(result: ExecResult): ToolOutput {
  return { content: formatExecResult(result), isError: true, exec: result };
}
