/**
 * `read_file`: a text file of the sandbox, or a range of its lines, read by a command in the container
 * as the sandbox user (never by harness on the host). Long files are cut like any command's output;
 * the whole of it is then kept for `read_output`.
 */
import type { ExecOptions, ExecResult, Sandbox } from "../sandbox/sandbox.js";
import { formatExecResult } from "./format-exec-result.js";
import type { OutputStore } from "./output-store.js";
import { sandboxPath } from "./sandbox-path.js";
import { shellQuote } from "./shell-quote.js";
import { type Tool, ToolError, type ToolOutput } from "./tool.js";

export interface ReadFileInput {
  /** Absolute path in the sandbox. */
  path: string;
  startLine: number | undefined;
  endLine: number | undefined;
}

export interface FileToolOptions {
  /** Per-command timeout, in milliseconds. */
  timeoutMs: number;
  /** Where the whole file goes when the answer is cut (see `read_output`). */
  outputStore?: OutputStore;
}

export function createReadFileTool(sandbox: Sandbox, options: FileToolOptions): Tool<ReadFileInput> {
  return {
    definition: {
      name: "read_file",
      description: [
        `Read a text file in the sandbox. Relative paths start at the project root, ${sandbox.workdir}.`,
        "Give start_line and end_line (1-based, inclusive) to read part of a long file. Long answers are cut (head and tail kept); the whole file is then readable with read_output.",
      ].join("\n"),
      inputSchema: {
        type: "object",
        properties: {
          path: { type: "string", description: "The file, absolute or relative to the project root." },
          start_line: { type: "integer", description: "First line to read, 1-based (default 1)." },
          end_line: { type: "integer", description: "Last line to read (default: the end of the file)." },
        },
        required: ["path"],
      },
    },

    parse(input: unknown): ReadFileInput {
      const fields = (typeof input === "object" && input !== null ? input : {}) as Record<string, unknown>;
      const path = sandboxPath(sandbox.workdir, fields["path"]);
      const startLine = lineNumber("start_line", fields["start_line"]);
      const endLine = lineNumber("end_line", fields["end_line"]);
      if (startLine !== undefined && endLine !== undefined && endLine < startLine) {
        throw new ToolError("Error: `end_line` must not be before `start_line`.");
      }
      return { path, startLine, endLine };
    },

    async run(input, context) {
      const file = shellQuote(input.path);
      const command =
        input.startLine === undefined && input.endLine === undefined
          ? `cat -- ${file}`
          : `sed -n -- '${input.startLine ?? 1},${input.endLine ?? "$"}p' ${file}`;
      const execOptions: ExecOptions = { timeoutMs: options.timeoutMs };
      if (context.signal !== undefined) execOptions.signal = context.signal;
      if (context.callId !== undefined) execOptions.callId = context.callId;
      const capture = options.outputStore?.begin();
      if (capture !== undefined) execOptions.onOutput = (stream, chunk) => capture.write(stream, chunk);
      let result: ExecResult;
      try {
        result = await sandbox.exec(command, execOptions);
      } catch (error) {
        capture?.finish(false);
        throw error;
      }
      const saved = capture?.finish(result.isTruncated) ?? [];
      // The file as it is when nothing went wrong; otherwise everything a command's result says.
      const plain = !result.failed && !result.isTruncated;
      const output: ToolOutput = {
        content: plain ? result.stdout : formatExecResult(result, saved),
        isError: result.failed,
        exec: result,
      };
      if (saved[0] !== undefined) output.outputId = saved[0].id;
      return output;
    },
  };
}

function lineNumber(name: string, value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
    throw new ToolError(`Error: \`${name}\` must be a whole number, 1 or more.`);
  }
  return value;
}
