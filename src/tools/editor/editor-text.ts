/**
 * The text editor's commands on a file's text, with the answers Anthropic's reference implementation
 * gives (anthropic-quickstarts, computer_use_demo/tools/edit.py, `EditTool20250728`): the model was
 * trained on these words. Two differences, on purpose: tabs are not expanded (the reference rewrites
 * every tab of a file it edits), and a view is cut at `max_characters` (the API's tool parameter).
 */
import { ToolError } from "../tool.js";

/** Lines shown around an edit. */
const SNIPPET_LINES = 4;

/** The reference's note when a view is cut. */
export const CLIPPED_NOTE =
  "<response clipped><NOTE>To save on context only part of this file has been shown to you. You should retry this tool after you have searched inside the file with `grep -n` in order to find the line numbers of what you are looking for.</NOTE>";

/** `cat -n` of `text`, numbered from `firstLine`, cut at `maxChars`. */
export function catN(text: string, descriptor: string, firstLine = 1, maxChars?: number): string {
  const clipped = maxChars !== undefined && text.length > maxChars;
  const shown = clipped ? text.slice(0, maxChars) : text;
  const lines = shown.split("\n").map((line, i) => `${String(i + firstLine).padStart(6)}\t${line}`);
  return `Here's the result of running \`cat -n\` on ${descriptor}:\n${lines.join("\n")}${clipped ? CLIPPED_NOTE : ""}\n`;
}

/** The `view` of a file, whole or a `[first, last]` range (`last` -1: to the end). */
export function viewText(path: string, text: string, range: unknown, maxChars?: number): string {
  if (range === undefined || range === null) return catN(text, path, 1, maxChars);
  if (!Array.isArray(range) || range.length !== 2 || !range.every((n) => Number.isInteger(n)))
    throw new ToolError("Invalid `view_range`. It should be a list of two integers.");
  const lines = text.split("\n");
  const [first, last] = range as [number, number];
  const shown = `[${first}, ${last}]`;
  if (first < 1 || first > lines.length)
    throw new ToolError(
      `Invalid \`view_range\`: ${shown}. Its first element \`${first}\` should be within the range of lines of the file: [1, ${lines.length}]`,
    );
  if (last > lines.length)
    throw new ToolError(
      `Invalid \`view_range\`: ${shown}. Its second element \`${last}\` should be smaller than the number of lines in the file: \`${lines.length}\``,
    );
  if (last !== -1 && last < first)
    throw new ToolError(
      `Invalid \`view_range\`: ${shown}. Its second element \`${last}\` should be larger or equal than its first \`${first}\``,
    );
  const part = lines.slice(first - 1, last === -1 ? undefined : last).join("\n");
  return catN(part, path, first, maxChars);
}

/** An edit: the file's new text and the answer. */
export interface Edited {
  text: string;
  message: string;
}

/** `str_replace`: `oldStr` must occur exactly once. */
export function replaceText(path: string, text: string, oldStr: string, newStr: string): Edited {
  const occurrences = countOf(text, oldStr);
  if (occurrences === 0)
    throw new ToolError(
      `No replacement was performed, old_str \`${oldStr}\` did not appear verbatim in ${path}.`,
    );
  if (occurrences > 1) {
    const lines = text
      .split("\n")
      .flatMap((line, i) => (line.includes(oldStr) ? [i + 1] : []))
      .join(", ");
    throw new ToolError(
      `No replacement was performed. Multiple occurrences of old_str \`${oldStr}\` in lines [${lines}]. Please ensure it is unique`,
    );
  }
  const at = text.indexOf(oldStr);
  const edited = text.slice(0, at) + newStr + text.slice(at + oldStr.length);
  const line = countOf(text.slice(0, at), "\n");
  const start = Math.max(0, line - SNIPPET_LINES);
  const end = line + SNIPPET_LINES + countOf(newStr, "\n");
  const snippet = edited
    .split("\n")
    .slice(start, end + 1)
    .join("\n");
  return {
    text: edited,
    message: `The file ${path} has been edited. ${catN(snippet, `a snippet of ${path}`, start + 1)}Review the changes and make sure they are as expected. Edit the file again if necessary.`,
  };
}

/** `insert`: `insertText` after line `line` (0: at the start). */
export function insertLines(path: string, text: string, line: number, insertText: string): Edited {
  const lines = text.split("\n");
  if (line < 0 || line > lines.length)
    throw new ToolError(
      `Invalid \`insert_line\` parameter: ${line}. It should be within the range of lines of the file: [0, ${lines.length}]`,
    );
  const added = insertText.split("\n");
  const edited = [...lines.slice(0, line), ...added, ...lines.slice(line)].join("\n");
  const snippet = [
    ...lines.slice(Math.max(0, line - SNIPPET_LINES), line),
    ...added,
    ...lines.slice(line, line + SNIPPET_LINES),
  ].join("\n");
  return {
    text: edited,
    message: `The file ${path} has been edited. ${catN(snippet, "a snippet of the edited file", Math.max(1, line - SNIPPET_LINES + 1))}Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.`,
  };
}

function countOf(text: string, part: string): number {
  if (part === "") return 0;
  let count = 0;
  for (let at = text.indexOf(part); at >= 0; at = text.indexOf(part, at + part.length)) count += 1;
  return count;
}
