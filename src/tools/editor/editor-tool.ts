/**
 * `str_replace_based_edit_tool`: Anthropic's text editor (`text_editor_20250728`), the schema Claude
 * models were trained on: `view` (a file with numbered lines, or a directory two levels deep),
 * `create`, `str_replace` and `insert`. It runs in the sandbox as the workspace owner, through the
 * same commands as `write_file` (../sandbox-files.ts): protected paths stay read-only, no link is
 * followed on the host, a link in the workspace that leads out of it is not followed at all, and a
 * file is edited whole only up to `maxFileBytes`.
 */
import type { Sandbox } from "../../sandbox/sandbox.js";
import { formatExecResult } from "../format-exec-result.js";
import {
  inspectSandboxFile,
  leadsOutOfWorkspace,
  type SandboxFile,
  writeSandboxFile,
} from "../sandbox-files.js";
import { shellQuote } from "../shell-quote.js";
import { type Tool, type ToolContext, ToolError, type ToolOutput } from "../tool.js";
import { insertLines, replaceText, viewText } from "./editor-text.js";

export const EDITOR_TOOL_NAME = "str_replace_based_edit_tool";
const COMMANDS = ["view", "create", "str_replace", "insert"] as const;
type Command = (typeof COMMANDS)[number];

export interface EditorToolOptions {
  /** Per-command timeout, in milliseconds. */
  timeoutMs: number;
  /** What one `view` shows at most (sent to the API as `max_characters`). Default 20,000. */
  maxCharacters?: number;
  /** Largest file the editor reads or edits whole. Default 2 MiB. */
  maxFileBytes?: number;
}

/** The editor's input, as validated. */
export interface EditorInput {
  command: Command;
  /** Absolute path in the sandbox. */
  path: string;
  fileText?: string;
  viewRange?: unknown;
  oldStr?: string;
  newStr?: string;
  insertLine?: number;
  insertText?: string;
}

export function createEditorTool(sandbox: Sandbox, options: EditorToolOptions): Tool<EditorInput> {
  const maxCharacters = options.maxCharacters ?? 20_000;
  const maxFileBytes = options.maxFileBytes ?? 2 * 1024 * 1024;
  const files = { timeoutMs: options.timeoutMs };

  /** What `path` is, refused when a link in the workspace leads out of it. */
  const inspect = async (path: string, context: ToolContext): Promise<SandboxFile> => {
    const file = await inspectSandboxFile(sandbox, path, maxFileBytes, files, context);
    if (file.exec.failed && file.exec.stdout === "") throw new ToolError(formatExecResult(file.exec));
    const out = leadsOutOfWorkspace(sandbox.workdir, path, file.realPath);
    if (out !== undefined) throw new ToolError(`Error: ${out}.`);
    return file;
  };

  /** The text of the file at `path`, which must exist and be a regular file of a bounded size. */
  const readText = async (input: EditorInput, context: ToolContext): Promise<string> => {
    const file = await inspect(input.path, context);
    if (file.kind === "missing")
      throw new ToolError(`The path ${input.path} does not exist. Please provide a valid path.`);
    if (file.kind === "directory")
      throw new ToolError(
        `The path ${input.path} is a directory and only the \`view\` command can be used on directories`,
      );
    if (file.kind !== "file" || file.content === undefined)
      throw new ToolError(`Error: ${input.path} is not a regular file.`);
    // Never edit what could not be read whole: an unreadable file's empty text would be written back.
    if (file.exec.failed) throw new ToolError(formatExecResult(file.exec));
    if (file.content.length > maxFileBytes)
      throw new ToolError(
        `Error: ${input.path} is ${file.size.toLocaleString("en-US")} bytes, more than the editor handles (${maxFileBytes.toLocaleString("en-US")}): use bash (sed, head, grep -n) for it.`,
      );
    if (file.content.includes(0))
      throw new ToolError(`Error: ${input.path} looks binary (it holds NUL bytes).`);
    return file.content.toString("utf8");
  };

  const write = async (path: string, text: string, context: ToolContext): Promise<void> => {
    const result = await writeSandboxFile(sandbox, path, text, files, context);
    if (result?.failed) throw new ToolError(formatExecResult(result));
  };

  const commands: Record<Command, (input: EditorInput, context: ToolContext) => Promise<string>> = {
    async view(input, context) {
      const file = await inspect(input.path, context);
      if (file.kind !== "directory")
        return viewText(input.path, await readText(input, context), input.viewRange, maxCharacters);
      if (input.viewRange !== undefined && input.viewRange !== null)
        throw new ToolError("The `view_range` parameter is not allowed when `path` points to a directory.");
      const listing = await sandbox.exec(`find ${shellQuote(input.path)} -maxdepth 2 -not -path '*/.*'`, {
        timeoutMs: options.timeoutMs,
        ...(context.signal === undefined ? {} : { signal: context.signal }),
        ...(context.callId === undefined ? {} : { callId: context.callId }),
      });
      if (listing.failed) throw new ToolError(formatExecResult(listing));
      return `Here's the files and directories up to 2 levels deep in ${input.path}, excluding hidden items:\n${listing.stdout}\n`;
    },
    async create(input, context) {
      if (input.fileText === undefined)
        throw new ToolError("Parameter `file_text` is required for command: create");
      const file = await inspect(input.path, context);
      if (file.kind !== "missing")
        throw new ToolError(
          `File already exists at: ${input.path}. Cannot overwrite files using command \`create\`.`,
        );
      if (Buffer.byteLength(input.fileText) > maxFileBytes)
        throw new ToolError(
          `Error: file_text is more than the editor writes (${maxFileBytes.toLocaleString("en-US")} bytes).`,
        );
      await write(input.path, input.fileText, context);
      return `File created successfully at: ${input.path}`;
    },
    async str_replace(input, context) {
      if (input.oldStr === undefined)
        throw new ToolError("Parameter `old_str` is required for command: str_replace");
      const edited = replaceText(
        input.path,
        await readText(input, context),
        input.oldStr,
        input.newStr ?? "",
      );
      await write(input.path, edited.text, context);
      return edited.message;
    },
    async insert(input, context) {
      if (input.insertLine === undefined)
        throw new ToolError("Parameter `insert_line` is required for command: insert");
      if (input.insertText === undefined)
        throw new ToolError("Parameter `insert_text` is required for command: insert");
      const edited = insertLines(
        input.path,
        await readText(input, context),
        input.insertLine,
        input.insertText,
      );
      await write(input.path, edited.text, context);
      return edited.message;
    },
  };

  return {
    definition: {
      name: EDITOR_TOOL_NAME,
      description: [
        `View, create and edit text files in the sandbox (absolute paths; the project is at ${sandbox.workdir}).`,
        "Commands: view (a file with line numbers, optionally a view_range [first, last], -1 for the end; a directory two levels deep), create (a new file), str_replace (old_str must occur exactly once), insert (insert_text after line insert_line, 0 for the start).",
      ].join("\n"),
      inputSchema: {
        type: "object",
        properties: {
          command: { type: "string", enum: [...COMMANDS] },
          path: { type: "string", description: "Absolute path of the file or directory." },
          file_text: { type: "string", description: "create: the new file's content." },
          view_range: { type: "array", items: { type: "integer" }, description: "view: [first, last] line." },
          old_str: {
            type: "string",
            description: "str_replace: the text to replace, exactly once in the file.",
          },
          new_str: { type: "string", description: "str_replace: its replacement." },
          insert_line: { type: "integer", description: "insert: the line after which to insert (0: start)." },
          insert_text: { type: "string", description: "insert: the text to insert." },
        },
        required: ["command", "path"],
      },
      anthropic: { type: "text_editor_20250728", maxCharacters },
    },

    parse(input: unknown): EditorInput {
      const fields = (typeof input === "object" && input !== null ? input : {}) as Record<string, unknown>;
      const command = fields["command"];
      if (typeof command !== "string" || !(COMMANDS as readonly string[]).includes(command))
        throw new ToolError(
          `Unrecognized command ${String(command)}. The allowed commands for the ${EDITOR_TOOL_NAME} tool are: ${COMMANDS.join(", ")}`,
        );
      const path = fields["path"];
      if (typeof path !== "string" || path === "") throw new ToolError("Parameter `path` is required.");
      if (path.includes("\0")) throw new ToolError("Error: `path` must not contain NUL characters.");
      if (!path.startsWith("/"))
        throw new ToolError(
          `The path ${path} is not an absolute path, it should start with \`/\`. Maybe you meant ${sandbox.workdir}/${path}?`,
        );
      const parsed: EditorInput = { command: command as Command, path };
      const text = (name: string): string | undefined => {
        const value = fields[name];
        if (value === undefined || value === null) return undefined;
        if (typeof value !== "string") throw new ToolError(`Parameter \`${name}\` must be a string.`);
        return value;
      };
      const fileText = text("file_text");
      const oldStr = text("old_str");
      const newStr = text("new_str");
      // The 20250728 schema names it insert_text; older ones used new_str.
      const insertText = text("insert_text") ?? (command === "insert" ? newStr : undefined);
      if (fileText !== undefined) parsed.fileText = fileText;
      if (oldStr !== undefined) parsed.oldStr = oldStr;
      if (newStr !== undefined) parsed.newStr = newStr;
      if (insertText !== undefined) parsed.insertText = insertText;
      const line = fields["insert_line"];
      if (line !== undefined && line !== null) {
        if (!Number.isInteger(line)) throw new ToolError("Parameter `insert_line` must be an integer.");
        parsed.insertLine = line as number;
      }
      if (fields["view_range"] !== undefined) parsed.viewRange = fields["view_range"];
      return parsed;
    },

    async run(input, context): Promise<ToolOutput> {
      return { content: await commands[input.command](input, context), isError: false };
    },
  };
}
