/**
 * Shows a run to a person: streamed assistant text, each command as `$ cmd`, the first lines of its
 * output and a one-line status, then a summary. Everything that came from the sandbox or the model
 * goes through `sanitizeForTerminal` first: both can print escape sequences. A command's output goes
 * through `commandLine`, which lets its plain colours through (command-output.ts).
 */
import type { AgentRunResult } from "../agent/agent-types.js";
import type { ContextEdit } from "../agent/context/context-edits.js";
import type { AgentEvents } from "../agent/events.js";
import type { TokenUsage } from "../model/model-client.js";
import { formatUsd } from "../model/pricing.js";
import type { ExecResult } from "../sandbox/sandbox.js";
import { formatBytes, formatDuration } from "../text/units.js";
import type { ToolCall, ToolResult } from "../tools/tool.js";
import { commandLine } from "./command-output.js";
import { LiveOutput } from "./live-output.js";
import { sanitizeForTerminal } from "./sanitize.js";
import { createStyle, type Style } from "./style.js";

export interface TerminalRendererOptions {
  /** Where to write (stderr when stdout carries the final answer, else stdout). */
  out: NodeJS.WritableStream;
  /** Use colours (see `colorEnabled`). */
  color: boolean;
  /** Output lines shown per command. Default 8. */
  previewLines?: number;
  /** Prices the run's tokens in USD for the summary; omitted when the model's prices are unknown. */
  costOf?: (usage: TokenUsage) => number;
}

const MAX_LINE_CHARS = 240;
const MAX_COMMAND_LINES = 6;
/** Characters of each thinking block shown (dimmed, on one line); the transcript keeps it whole. */
const MAX_THINKING_CHARS = 160;

export function createTerminalRenderer(options: TerminalRendererOptions): AgentEvents {
  const style = createStyle(options.color);
  const previewLines = options.previewLines ?? 8;
  let atLineStart = true;

  const write = (text: string) => {
    if (text === "") return;
    options.out.write(text);
    atLineStart = text.endsWith("\n");
  };
  const line = (text: string) => {
    if (!atLineStart) write("\n");
    write(`${text}\n`);
  };

  // Characters of the current thinking block shown so far; undefined outside a thinking block.
  let thinking: number | undefined;
  const endThinking = () => {
    if (thinking !== undefined && !atLineStart) write("\n");
    thinking = undefined;
  };

  // The command running now, with the lines of its output already shown live.
  let live: { call: ToolCall; output: LiveOutput } | undefined;
  // A command's own colours are kept on a colour terminal (and dropped otherwise); nothing else is.
  const liveLine = (stream: "stdout" | "stderr", text: string) => {
    const shown = `  ${commandLine(text, options.color, MAX_LINE_CHARS)}`;
    line(stream === "stdout" ? style.dim(shown) : style.error(shown));
  };

  return {
    onThinking: (delta, first) => {
      if (first || thinking === undefined) {
        endThinking();
        if (!atLineStart) write("\n");
        write(style.dim("✻ "));
        thinking = 0;
      }
      if (thinking >= MAX_THINKING_CHARS) return;
      const flat = delta.replace(/[\r\n\t]+/g, " ");
      const piece = sanitizeForTerminal(flat, { oneLine: true }).slice(0, MAX_THINKING_CHARS - thinking);
      thinking += piece.length;
      write(style.dim(thinking >= MAX_THINKING_CHARS ? `${piece}…` : piece));
    },
    onText: (delta) => {
      endThinking();
      write(sanitizeForTerminal(delta));
    },
    onAssistantTurn: () => {
      endThinking();
      if (!atLineStart) write("\n");
    },
    onContextEdit: (edit) => line(style.warn(`! ${describeEdit(edit)}`)),
    onToolCall: (call) => line(style.command(describeCall(call))),
    onToolOutput: (call, stream, chunk) => {
      if (live?.call !== call) live = { call, output: new LiveOutput(previewLines, liveLine) };
      live.output.push(stream, chunk);
    },
    onToolResult: (call, result) => {
      const streamed = live?.call === call ? live.output : undefined;
      live = undefined;
      if (result.exec === undefined) {
        // A tool that ran no command (the editor, read_output) or a call that never ran.
        line(
          result.isError
            ? style.error(`✗ ${firstLine(result.content)}`)
            : style.ok(`✓ ${firstLine(result.content)}`),
        );
        return;
      }
      if (streamed) {
        // The first lines were shown as they came; only say whether there was more.
        if (streamed.finish().more) line(style.dim("  …"));
      } else {
        for (const text of preview(result.exec, previewLines, style, options.color)) line(text);
      }
      line(statusLine(result, result.exec, style));
    },
    onNotice: (text) => line(style.warn(`! ${sanitizeForTerminal(text)}`)),
    onRunEnd: (result) => line(summary(result, style, options.costOf)),
  };
}

function describeEdit(edit: ContextEdit): string {
  const n = (value: number) => value.toLocaleString("en-US");
  switch (edit.kind) {
    case "compaction":
      return `context: the API compacted the conversation (${n(edit.droppedMessages)} earlier messages now stand as its summary; the context is ${n(edit.contextTokens)} tokens)`;
    case "clear_tool_results":
      return `context: cleared ${edit.cleared.length} old tool result(s), about ${n(edit.tokensBefore)} → ${n(edit.tokensAfter)} tokens (their text stays readable with read_output)`;
    case "summary":
      return `context: summarized the conversation before the last turn, about ${n(edit.tokensBefore)} → ${n(edit.tokensAfter)} tokens`;
  }
}

function describeCall(call: ToolCall): string {
  const input = call.input as { command?: unknown; restart?: unknown; path?: unknown } | null;
  if (call.name === "bash" && input?.restart === true && input.command === undefined)
    return "$ (restart the shell)";
  if (call.name === "str_replace_based_edit_tool" && typeof input?.command === "string") {
    return `✎ ${sanitizeForTerminal(`${input.command} ${String(input.path ?? "")}`, { oneLine: true })}`;
  }
  if (call.name === "bash" && typeof input?.command === "string") {
    const lines = sanitizeForTerminal(input.command).split("\n");
    const shown = lines.slice(0, MAX_COMMAND_LINES).map((text, i) => `${i === 0 ? "$" : ">"} ${clip(text)}`);
    if (lines.length > MAX_COMMAND_LINES) shown.push(`  … ${lines.length - MAX_COMMAND_LINES} more lines`);
    return shown.join("\n");
  }
  return `→ ${sanitizeForTerminal(call.name)} ${clip(sanitizeForTerminal(JSON.stringify(call.input) ?? ""))}`;
}

function preview(exec: ExecResult, maxLines: number, style: Style, colour: boolean): string[] {
  const lines = [
    ...outputLines(exec.stdout, colour).map((text) => style.dim(`  ${text}`)),
    ...outputLines(exec.stderr, colour).map((text) => style.error(`  ${text}`)),
  ];
  if (lines.length <= maxLines) return lines;
  return [...lines.slice(0, maxLines), style.dim(`  … ${lines.length - maxLines} more lines`)];
}

/** A command's output as terminal lines, each cut to fit (its colours as `commandLine` keeps them). */
function outputLines(text: string, colour: boolean): string[] {
  const lines = text.replace(/\r\n?/g, "\n").replace(/\n+$/, "");
  return lines === "" ? [] : lines.split("\n").map((line) => commandLine(line, colour, MAX_LINE_CHARS));
}

function statusLine(result: ToolResult, exec: ExecResult, style: Style): string {
  const parts = [`exit ${exec.exitCode ?? "none"}`, formatDuration(exec.durationMs)];
  if (exec.timedOut) parts.push("timed out");
  if (exec.isCanceled) parts.push("cancelled");
  if (exec.oomKilled) parts.push("killed: out of memory");
  if (exec.isTruncated)
    parts.push(`output truncated (${formatBytes(exec.stdoutBytes + exec.stderrBytes)} total)`);
  for (const notice of exec.notices) parts.push(sanitizeForTerminal(notice));
  const text = parts.join(" · ");
  return result.isError ? style.error(`✗ ${text}`) : style.ok(`✓ ${text}`);
}

function summary(result: AgentRunResult, style: Style, costOf?: (usage: TokenUsage) => number): string {
  const { usage } = result;
  const n = (value: number) => value.toLocaleString("en-US");
  const tokens = `tokens: ${n(usage.inputTokens)} input, ${n(usage.cacheReadInputTokens)} cache read, ${n(usage.cacheCreationInputTokens)} cache write, ${n(usage.outputTokens)} output`;
  const turns = `${result.turns} ${result.turns === 1 ? "turn" : "turns"}`;
  const color =
    result.status === "submitted" ? style.ok : result.status === "error" ? style.error : style.warn;
  const cost = costOf === undefined ? "" : ` · cost ≈ ${formatUsd(costOf(usage))}`;
  const lines = [`${color(style.bold(result.status))} · ${turns} · ${tokens}${cost}`];
  if (result.error !== undefined)
    lines.push(style.error(`Error: ${sanitizeForTerminal(result.error.message)}`));
  return lines.join("\n");
}

function firstLine(text: string): string {
  return clip(sanitizeForTerminal(text).split("\n")[0] ?? "");
}

function clip(text: string): string {
  return text.length <= MAX_LINE_CHARS ? text : `${text.slice(0, MAX_LINE_CHARS)}…`;
}
