/**
 * `write_file`: writes a file in the sandbox by commands in the container, as the sandbox user, so it
 * can write exactly what a `bash` call could (read-only protected paths stay read-only) and never
 * follows a link on the host. The content travels base64-encoded on the command line, in pieces that
 * fit one argument (Linux caps one at 128 KiB), appended in turn.
 */
import type { ExecOptions, ExecResult, Sandbox } from "../sandbox/sandbox.js";
import { formatExecResult } from "./format-exec-result.js";
import type { FileToolOptions } from "./read-file-tool.js";
import { sandboxPath } from "./sandbox-path.js";
import { shellQuote } from "./shell-quote.js";
import { type Tool, ToolError } from "./tool.js";

export interface WriteFileInput {
  /** Absolute path in the sandbox. */
  path: string;
  content: string;
}

/** Base64 characters per command: a multiple of 4, well under the 128 KiB argument cap. */
const PIECE_CHARS = 64 * 1024;

export function createWriteFileTool(
  sandbox: Sandbox,
  options: Pick<FileToolOptions, "timeoutMs">,
): Tool<WriteFileInput> {
  return {
    definition: {
      name: "write_file",
      description: [
        `Create or overwrite a file in the sandbox with the given text. Relative paths start at the project root, ${sandbox.workdir}.`,
        "Missing parent directories are created.",
      ].join("\n"),
      inputSchema: {
        type: "object",
        properties: {
          path: { type: "string", description: "The file, absolute or relative to the project root." },
          content: { type: "string", description: "The whole new content of the file." },
        },
        required: ["path", "content"],
      },
    },

    parse(input: unknown): WriteFileInput {
      const fields = (typeof input === "object" && input !== null ? input : {}) as Record<string, unknown>;
      const path = sandboxPath(sandbox.workdir, fields["path"]);
      const content = fields["content"];
      if (typeof content !== "string") throw new ToolError("Error: `content` must be a string.");
      return { path, content };
    },

    async run(input, context) {
      const file = shellQuote(input.path);
      const bytes = Buffer.byteLength(input.content);
      const encoded = Buffer.from(input.content).toString("base64");
      const pieces: string[] = [];
      for (let at = 0; at < encoded.length; at += PIECE_CHARS)
        pieces.push(encoded.slice(at, at + PIECE_CHARS));
      const dir = input.path.slice(0, input.path.lastIndexOf("/")) || "/";
      const commands = [
        `mkdir -p -- ${shellQuote(dir)} && printf '%s' '${pieces[0] ?? ""}' | base64 -d > ${file}`,
        ...pieces.slice(1).map((piece) => `printf '%s' '${piece}' | base64 -d >> ${file}`),
      ];
      const execOptions: ExecOptions = { timeoutMs: options.timeoutMs };
      if (context.signal !== undefined) execOptions.signal = context.signal;
      if (context.callId !== undefined) execOptions.callId = context.callId;
      let result: ExecResult | undefined;
      for (const command of commands) {
        result = await sandbox.exec(command, execOptions);
        if (result.failed) return { content: formatExecResult(result), isError: true, exec: result };
      }
      return {
        content: `Wrote ${bytes.toLocaleString("en-US")} bytes to ${input.path}.`,
        isError: false,
        ...(result === undefined ? {} : { exec: result }),
      };
    },
  };
}
