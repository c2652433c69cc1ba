/**
 * `harness runs show`'s lines for a step and for a context edit: a bash call as its command line, an
 * editor call (`str_replace_based_edit_tool`) as its command, path and what it changed, any other
 * tool as its input; each edit that kept the conversation within the window as one line. All text
 * came from the model or a command: control characters are shown as escapes (sanitizeForTerminal).
 */
import { sanitizeForTerminal } from "../terminal/sanitize.js";
import type { ContextRecord, UncheckedRecord } from "../transcript/transcript-records.js";

export const INDENT = "    ";
/** Anthropic's text editor, by the one name the API gives it. */
const EDITOR = "str_replace_based_edit_tool";
const MAX_COMMAND_LINES = 6;
/** Characters of an edit's old or new text shown. */
const SNIPPET = 60;

/** A tool call as the show knows it: its step number, tool and input. */
export interface ShownCall {
  n: number;
  name: string;
  input: unknown;
}

/**
 * The head of a step: `[3] $ make test`, `[4] ✎ str_replace /w/a.py: "x = 1" → "x = 2"` (the
 * terminal's mark for an editor call).
 */
export function callHead(call: ShownCall, command?: string): string[] {
  const label = `[${call.n}]`;
  if (call.name === EDITOR) return [`${label} ✎ ${editorSummary(call.input)}`];
  if (call.name !== "bash")
    return [`${label} ${safe(call.name)} ${oneLine(JSON.stringify(call.input) ?? "")}`];
  const given = command ?? (call.input as { command?: unknown } | null)?.command;
  const lines = (typeof given === "string" ? given : "").split("\n");
  const shown = lines
    .slice(0, MAX_COMMAND_LINES)
    .map((line, i) => (i === 0 ? `${label} $ ${safe(line)}` : `${INDENT}  ${safe(line)}`));
  if (lines.length > MAX_COMMAND_LINES)
    shown.push(`${INDENT}  … (${lines.length - MAX_COMMAND_LINES} more lines)`);
  return shown;
}

/** How an answered editor call went: "ok", what a view showed, or the error's first line. */
export function editorOutcome(input: unknown, content: string, isError: boolean): string {
  if (isError) return `error: ${firstLine(content)}`;
  const command = (input as { command?: unknown } | null)?.command;
  return command === "view" ? `ok (${count(content.length, "character")})` : "ok";
}

/** The editor call's command, path and what it changes, on one line. */
function editorSummary(input: unknown): string {
  const fields = (typeof input === "object" && input !== null ? input : {}) as Record<string, unknown>;
  const text = (name: string) => (typeof fields[name] === "string" ? (fields[name] as string) : undefined);
  const command = text("command") ?? "?";
  const head = `${safe(command)} ${oneLine(text("path") ?? "?")}`;
  switch (command) {
    case "view": {
      const range = fields["view_range"];
      if (!Array.isArray(range) || range.length !== 2) return head;
      const [first, last] = range as unknown[];
      return `${head} lines ${String(first)}-${last === -1 ? "end" : String(last)}`;
    }
    case "create":
      return `${head} (${lineCount(text("file_text") ?? "")})`;
    case "str_replace":
      return `${head}: ${snippet(text("old_str") ?? "")} → ${snippet(text("new_str") ?? "")}`;
    case "insert": {
      const added = text("insert_text") ?? text("new_str") ?? "";
      return `${head} after line ${String(fields["insert_line"] ?? "?")} (+${lineCount(added)})`;
    }
    default:
      return head;
  }
}

/** One line for a context record: what was done to keep the conversation within the window. */
export function contextLine(row: UncheckedRecord<ContextRecord> & Record<string, unknown>): string[] {
  const n = (key: string) => (typeof row[key] === "number" ? (row[key] as number) : undefined);
  const tokens = (key: string) => n(key)?.toLocaleString("en-US") ?? "?";
  switch (row["kind"]) {
    case "compaction":
      return [
        `context: the API compacted the conversation (${tokens("droppedMessages")} earlier messages now stand as its summary; the context is ${tokens("contextTokens")} tokens)`,
      ];
    case "clear_tool_results": {
      const cleared = Array.isArray(row["cleared"]) ? row["cleared"].length : 0;
      return [
        `context: cleared ${cleared} old tool result(s), about ${tokens("tokensBefore")} → ${tokens("tokensAfter")} tokens (their text stays readable with read_output)`,
      ];
    }
    case "summary":
      return [
        `context: summarized the conversation before the last turn, about ${tokens("tokensBefore")} → ${tokens("tokensAfter")} tokens`,
      ];
    default:
      return [`context: ${oneLine(String(row["kind"] ?? "?"))}`];
  }
}

/** A note for each signed block an assistant record did not write (it held an API key). */
export function withheldLines(content: unknown): string[] {
  if (!Array.isArray(content)) return [];
  return content.flatMap((block: { type?: unknown; block?: unknown; reason?: unknown } | null) =>
    typeof block === "object" && block !== null && block.type === "withheld"
      ? [`note: a ${oneLine(String(block.block))} block was not recorded: ${oneLine(String(block.reason))}`]
      : [],
  );
}

/** `"first line"` of a text cut to a few words, or "(nothing)". */
function snippet(text: string): string {
  if (text === "") return "(nothing)";
  const flat = safe(text).replace(/\s+/g, " ").trim();
  const cut = flat.length > SNIPPET ? `${flat.slice(0, SNIPPET - 1)}…` : flat;
  const more = text.trimEnd().includes("\n") ? ` (${lineCount(text)})` : "";
  return `"${cut}"${more}`;
}

function lineCount(text: string): string {
  const lines = text === "" ? 0 : text.replace(/\n$/, "").split("\n").length;
  return count(lines, "line");
}

function count(n: number, word: string): string {
  return `${n.toLocaleString("en-US")} ${word}${n === 1 ? "" : "s"}`;
}

export function safe(text: string): string {
  return sanitizeForTerminal(text);
}

/** Tabs and newlines as spaces, cut at 200 characters. */
export function oneLine(text: string): string {
  const flat = safe(text).replace(/\s+/g, " ").trim();
  return flat.length > 200 ? `${flat.slice(0, 199)}…` : flat;
}

export function firstLine(text: string): string {
  return oneLine(text.trim().split("\n")[0] ?? "");
}
