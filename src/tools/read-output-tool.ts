/**
 * `read_output`: pages through the full output of an earlier command whose output was cut, by line
 * range or with a regular expression. It reads harness's own saved files on the host; the model names
 * an id, never a path.
 */

import { visibleControls } from "../text/visible-controls.js";
import type { OutputStore, StreamName } from "./output-store.js";
import { scanOutputFile } from "./scan-output-file.js";
import { type Tool, ToolError } from "./tool.js";
import { truncateMiddle } from "./truncate.js";

export interface ReadOutputInput {
  id: string;
  stream: StreamName;
  startLine: number;
  endLine: number | undefined;
  grep: RegExp | undefined;
}

const MAX_LINES = 400;
const MAX_MATCHES = 200;
const MAX_CHARS = 20_000;
const MAX_LINE_CHARS = 2_000;
const SCAN_TIMEOUT_MS = 10_000;

export function createReadOutputTool(
  store: OutputStore,
  options: { scanTimeoutMs?: number } = {},
): Tool<ReadOutputInput> {
  const scanTimeoutMs = options.scanTimeoutMs ?? SCAN_TIMEOUT_MS;
  return {
    definition: {
      name: "read_output",
      description: [
        "Read the full output of an earlier bash command whose output was cut, or the text of a tool result harness cleared from the conversation to keep it within the context window. The result names an id like out-3.",
        `Give a line range (at most ${MAX_LINES} lines per call) or a regular expression to grep for (matching lines with their numbers).`,
      ].join("\n"),
      inputSchema: {
        type: "object",
        properties: {
          id: { type: "string", description: "The saved output's id, e.g. out-3." },
          stream: {
            type: "string",
            enum: ["stdout", "stderr"],
            description: "Which stream (default stdout).",
          },
          start_line: { type: "integer", description: "First line to show, 1-based (default 1)." },
          end_line: {
            type: "integer",
            description: `Last line to show (default start_line + ${MAX_LINES - 1}).`,
          },
          grep: {
            type: "string",
            description: "Regular expression: show only matching lines (with line numbers).",
          },
        },
        required: ["id"],
      },
    },

    parse(input: unknown): ReadOutputInput {
      const raw = (typeof input === "object" && input !== null ? input : {}) as Record<string, unknown>;
      if (typeof raw["id"] !== "string") throw new ToolError("Error: `id` must be a string like out-3.");
      const stream = raw["stream"] ?? "stdout";
      if (stream !== "stdout" && stream !== "stderr")
        throw new ToolError('Error: `stream` must be "stdout" or "stderr".');
      const startLine = raw["start_line"] ?? 1;
      const endLine = raw["end_line"];
      if (typeof startLine !== "number" || !Number.isInteger(startLine) || startLine < 1) {
        throw new ToolError("Error: `start_line` must be a whole number from 1.");
      }
      if (
        endLine !== undefined &&
        (typeof endLine !== "number" || !Number.isInteger(endLine) || endLine < startLine)
      ) {
        throw new ToolError("Error: `end_line` must be a whole number not below `start_line`.");
      }
      let grep: RegExp | undefined;
      if (raw["grep"] !== undefined) {
        if (typeof raw["grep"] !== "string") throw new ToolError("Error: `grep` must be a string.");
        try {
          grep = new RegExp(raw["grep"]);
        } catch (error) {
          throw new ToolError(
            `Error: \`grep\` is not a valid regular expression: ${(error as Error).message}`,
          );
        }
      }
      return { id: raw["id"], stream, startLine, endLine: endLine as number | undefined, grep };
    },

    async run(input) {
      const saved = store.get(input.id, input.stream);
      if (!saved) {
        return { content: `Error: no saved ${input.stream} with id '${input.id}'.`, isError: true };
      }
      const last = input.endLine ?? input.startLine + MAX_LINES - 1;
      const scan = await scanOutputFile(
        {
          path: saved.readPath,
          pattern: input.grep?.source,
          startLine: input.startLine,
          endLine: last,
          maxLines: input.grep ? MAX_MATCHES : MAX_LINES,
          maxLineChars: MAX_LINE_CHARS,
        },
        scanTimeoutMs,
      );
      if (scan === "timeout") {
        return {
          content: `Error: reading ${input.id} took longer than ${scanTimeoutMs / 1000} s and was stopped; use a simpler \`grep\` pattern or a line range.`,
          isError: true,
        };
      }
      const { shown, total: lineNo } = scan;
      const partial =
        saved.savedBytes < saved.totalBytes
          ? ` Only the first ${saved.savedBytes.toLocaleString("en-US")} of ${saved.totalBytes.toLocaleString("en-US")} bytes were saved.`
          : "";
      const what = input.grep
        ? `${shown.length} matching line(s)${shown.length === MAX_MATCHES ? ` (first ${MAX_MATCHES})` : ""}`
        : `lines ${input.startLine}-${Math.min(last, lineNo)}`;
      const header = `${input.id} ${input.stream}: ${what} of ${lineNo}.${partial}`;
      const page = visibleControls(truncateMiddle(shown.join("\n"), MAX_CHARS).text);
      return { content: `${header}\n${page}`, isError: false };
    },
  };
}
