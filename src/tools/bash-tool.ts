/**
 * The one tool the model always gets: run a shell command in the sandbox. With `anthropic`, it is
 * declared as Anthropic's `bash_20250124` (the schema Claude models were trained on: `command`, and
 * `restart`), else as a custom tool with harness's own description and a `timeout`.
 */
import type { ExecOptions, ExecResult, Sandbox } from "../sandbox/sandbox.js";
import { restartShell } from "./bash-restart.js";
import type { Blocklist } from "./blocklist.js";
import { formatExecResult } from "./format-exec-result.js";
import type { OutputStore } from "./output-store.js";
import { type Tool, type ToolContext, ToolError, type ToolOutput } from "./tool.js";

export interface BashToolOptions {
  /** Default per-command timeout, in milliseconds. */
  timeoutMs: number;
  /** Longest timeout the model may ask for. Default: the larger of `timeoutMs` and 10 minutes. */
  maxTimeoutMs?: number;
  /** Tripwire checked before every command; omit to check nothing (the container stays the boundary). */
  blocklist?: Blocklist;
  /** Where the whole output of a command goes when the model's copy is cut (see `read_output`). */
  outputStore?: OutputStore;
  /** Declare it as Anthropic's `bash_20250124` (the model's own schema). */
  anthropic?: boolean;
}

/** The bash tool's input, as validated. */
export interface BashInput {
  /** The shell command line ("" with `restart` alone). */
  command: string;
  /** Timeout for this command in seconds; already capped at the maximum. */
  timeout?: number;
  /** Restart the shell first (bash_20250124): earlier calls' background jobs killed, cwd reset. */
  restart?: true;
}

const DEFAULT_MAX_TIMEOUT_MS = 600_000;

export function createBashTool(sandbox: Sandbox, options: BashToolOptions): Tool<BashInput> {
  const maxTimeoutMs = options.maxTimeoutMs ?? Math.max(options.timeoutMs, DEFAULT_MAX_TIMEOUT_MS);
  const seconds = (ms: number) => Math.round(ms / 1000);

  const tool: Tool<BashInput> = {
    definition: {
      name: "bash",
      description: [
        `Run a shell command with bash in a Linux sandbox container. The project is at ${sandbox.workdir}.`,
        "The working directory persists between calls; other shell state (variables, functions) may not, so set it in the same command.",
        "stdin is closed: interactive programs (editors, pagers, prompts, REPLs) fail or hang. Use non-interactive flags (-y, --no-pager, --yes) instead.",
        `Each command is killed after ${seconds(options.timeoutMs)} s unless you pass \`timeout\` (seconds, at most ${seconds(maxTimeoutMs)}).`,
        "A command that never exits (a server, a watcher) must run in the background with its output redirected to a file, e.g. `nohup npm start > server.log 2>&1 &`, then read the log.",
        "You get stdout, stderr and the exit code. Long output is cut (head and tail kept): redirect it to a file and use grep, head or tail.",
      ].join("\n"),
      inputSchema: {
        type: "object",
        properties: {
          command: { type: "string", description: "The command line to run." },
          timeout: {
            type: "number",
            description: `Timeout in seconds for this command (default ${seconds(options.timeoutMs)}, max ${seconds(maxTimeoutMs)}).`,
          },
        },
        required: ["command"],
      },
      ...(options.anthropic ? { anthropic: { type: "bash_20250124" as const } } : {}),
    },

    parse(input: unknown): BashInput {
      if (typeof input !== "object" || input === null) {
        throw new ToolError('Error: the bash tool needs an object input like {"command": "ls"}.');
      }
      const { command, timeout, restart } = input as Record<string, unknown>;
      const restarting = restart === true;
      if (restarting && (command === undefined || command === null)) return { command: "", restart: true };
      if (typeof command !== "string" || command.trim() === "") {
        throw new ToolError("Error: `command` must be a non-empty string.");
      }
      const parsed: BashInput = restarting ? { command, restart: true } : { command };
      if (timeout === undefined || timeout === null) return parsed;
      if (typeof timeout !== "number" || !Number.isFinite(timeout) || timeout <= 0) {
        throw new ToolError("Error: `timeout` must be a positive number of seconds.");
      }
      return { ...parsed, timeout: Math.min(timeout, maxTimeoutMs / 1000) };
    },

    async run(input, context) {
      if (input.restart) {
        const restarted = await restartShell(sandbox, {
          timeoutMs: options.timeoutMs,
          ...(context.signal === undefined ? {} : { signal: context.signal }),
          ...(context.callId === undefined ? {} : { callId: context.callId }),
        });
        if (input.command === "" || restarted.isError) return restarted;
        const { restart: _done, ...rest } = input;
        const ran = await runCommand(rest, context);
        return { ...ran, content: `${restarted.content}\n${ran.content}` };
      }
      return runCommand(input, context);
    },
  };
  return tool;

  async function runCommand(input: BashInput, context: ToolContext): Promise<ToolOutput> {
    const verdict = options.blocklist?.check(input.command) ?? { blocked: false };
    if (verdict.blocked) {
      return {
        content: `Blocked: this command was not run (harness safety rule "${verdict.rule}": ${verdict.reason}).`,
        isError: true,
      };
    }
    const execOptions: ExecOptions = {
      timeoutMs: input.timeout === undefined ? options.timeoutMs : Math.round(input.timeout * 1000),
    };
    if (context.signal !== undefined) execOptions.signal = context.signal;
    if (context.callId !== undefined) execOptions.callId = context.callId;
    const capture = options.outputStore?.begin();
    if (capture !== undefined || context.onOutput !== undefined) {
      execOptions.onOutput = (stream, chunk) => {
        capture?.write(stream, chunk);
        context.onOutput?.(stream, chunk);
      };
    }
    let result: ExecResult;
    try {
      result = await sandbox.exec(input.command, execOptions);
    } catch (error) {
      capture?.finish(false);
      throw error;
    }
    const saved = capture?.finish(result.isTruncated) ?? [];
    const output: ToolOutput = {
      content: formatExecResult(result, saved),
      isError: result.failed,
      exec: result,
    };
    if (saved[0] !== undefined) output.outputId = saved[0].id;
    return output;
  }
}
