/**
 * `write_file`: writes a file in the sandbox by commands in the container, as the sandbox user, so it
 * can write exactly what a `bash` call could (read-only protected paths stay read-only) and never
 * follows a link on the host (sandbox-files.ts).
 */
import type { Sandbox } from "../sandbox/sandbox.js";
import { formatExecResult } from "./format-exec-result.js";
import type { FileToolOptions } from "./read-file-tool.js";
import { writeSandboxFile } from "./sandbox-files.js";
import { sandboxPath } from "./sandbox-path.js";
import { type Tool, ToolError } from "./tool.js";

export interface WriteFileInput {
  /** Absolute path in the sandbox. */
  path: string;
  content: string;
}

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
      const bytes = Buffer.byteLength(input.content);
      const result = await writeSandboxFile(sandbox, input.path, input.content, options, context);
      if (result?.failed) return { content: formatExecResult(result), isError: true, exec: result };
      return {
        content: `Wrote ${bytes.toLocaleString("en-US")} bytes to ${input.path}.`,
        isError: false,
        ...(result === undefined ? {} : { exec: result }),
      };
    },
  };
}
