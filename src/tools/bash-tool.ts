/**
 * The one tool the model gets: run a shell command in the sandbox.
 */
import type { ExecOptions, ExecResult, Sandbox } from "../sandbox/sandbox.js";
import type { Blocklist } from "./blocklist.js";
import { formatExecResult } from "./format-exec-result.js";
import type { OutputStore } from "./output-store.js";
import { type Tool, ToolError } from "./tool.js";

export interface BashToolOptions {
  /** Default per-command timeout, in milliseconds. */
  timeoutMs: number;
  /** Longest timeout the model may ask for. Default: the larger of `timeoutMs` and 10 minutes. */
  maxTimeoutMs?: number;
  /** Tripwire checked before every command; omit to check nothing (the container stays the boundary). */
  blocklist?: Blocklist;
  /** Where the whole output of a command goes when the model's copy is cut (see `read_output`). */
  outputStore?: OutputStore;
}

/** The bash tool's input, as validated. */
export interface BashInput {
  /** The shell command line. */
  command: string;
  /** Timeout for this command in seconds; already capped at the maximum. */
  timeout?: number;
}

const DEFAULT_MAX_TIMEOUT_MS = 600_000;

export function createBashTool(sandbox: Sandbox, options: BashToolOptions): Tool<BashInput> {
  const maxTimeoutMs = options.maxTimeoutMs ?? Math.max(options.timeoutMs, DEFAULT_MAX_TIMEOUT_MS);
  const seconds = (ms: number) => Math.round(ms / 1000);

  return {
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
    },

    parse(input: unknown): BashInput {
      if (typeof input !== "object" || input === null) {
        throw new ToolError('Error: the bash tool needs an object input like {"command": "ls"}.');
      }
      const { command, timeout } = input as Record<string, unknown>;
      if (typeof command !== "string" || command.trim() === "") {
        throw new ToolError("Error: `command` must be a non-empty string.");
      }
      if (timeout === undefined || timeout === null) return { command };
      if (typeof timeout !== "number" || !Number.isFinite(timeout) || timeout <= 0) {
        throw new ToolError("Error: `timeout` must be a positive number of seconds.");
      }
      return { command, timeout: Math.min(timeout, maxTimeoutMs / 1000) };
    },

    async run(input, context) {
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
      return { content: formatExecResult(result, saved), isError: result.failed, exec: result };
    },
  };
}
