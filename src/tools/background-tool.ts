/**
 * `background_processes`: what still runs in the sandbox's background (servers, watchers started with
 * `nohup … &`), as the sandbox lists it after a command. The command is a no-op: the list comes
 * from the engine (`docker top`), which the sandbox cannot fake.
 */
import type { BackgroundProcess, ExecOptions, Sandbox } from "../sandbox/sandbox.js";
import { visibleControls } from "../text/visible-controls.js";
import { formatExecResult } from "./format-exec-result.js";
import type { Tool } from "./tool.js";

export function createBackgroundTool(sandbox: Sandbox, options: { timeoutMs: number }): Tool<undefined> {
  return {
    definition: {
      name: "background_processes",
      description:
        "List the processes still running in the sandbox's background (servers, watchers started with `nohup … &`), oldest first, with their age.",
      inputSchema: { type: "object", properties: {} },
    },

    parse(): undefined {
      return undefined;
    },

    async run(_input, context) {
      const execOptions: ExecOptions = { timeoutMs: options.timeoutMs };
      if (context.signal !== undefined) execOptions.signal = context.signal;
      if (context.callId !== undefined) execOptions.callId = context.callId;
      const result = await sandbox.exec("true", execOptions);
      if (result.failed) return { content: formatExecResult(result), isError: true, exec: result };
      return { content: backgroundList(result.background ?? []), isError: false, exec: result };
    },
  };
}

/** One line per job: its age in seconds, then its command line. */
function backgroundList(jobs: readonly BackgroundProcess[]): string {
  if (jobs.length === 0) return "Nothing is running in the background.";
  return jobs.map((job) => `${job.ageSeconds} s\t${visibleControls(job.command)}`).join("\n");
}
