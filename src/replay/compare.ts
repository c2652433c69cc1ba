/**
 * Compares what a replayed command did with what the recording says it did: exactly, byte for byte,
 * or exit codes only. A difference comes with a short unified-style excerpt of the first lines that
 * differ (not a full diff: enough to see what changed, small enough for a terminal).
 */
import { PLACEHOLDER_PATTERN } from "../sandbox/egress/secrets/secret-book.js";
import type { RecordedOutput } from "./read-transcript.js";

/** How strictly to compare. */
export interface CompareOptions {
  /** Compare exit codes (and timeouts) only; stdout and stderr may differ. */
  ignoreOutput?: boolean;
}

/** The outcome of comparing one call. */
export interface Comparison {
  /** True when everything compared is equal. */
  matches: boolean;
  /** True when the exit code and the timed-out flag are equal. */
  exitMatches: boolean;
  /** Excerpt of the first differing stdout lines; absent when equal or ignored. */
  stdoutDiff?: string[];
  /** Excerpt of the first differing stderr lines; absent when equal or ignored. */
  stderrDiff?: string[];
}

/** Lines of each side shown after the first difference. */
const SHOWN_LINES = 3;
/** Characters of one line shown; longer lines are cut with an ellipsis. */
const SHOWN_CHARS = 160;

export function compareOutputs(
  recorded: RecordedOutput,
  replayed: RecordedOutput,
  options: CompareOptions = {},
): Comparison {
  const exitMatches = recorded.exitCode === replayed.exitCode && recorded.timedOut === replayed.timedOut;
  const comparison: Comparison = { matches: exitMatches, exitMatches };
  if (options.ignoreOutput) return comparison;
  if (samePlaceholders(recorded.stdout) !== samePlaceholders(replayed.stdout)) {
    comparison.stdoutDiff = firstDifference(recorded.stdout, replayed.stdout, "stdout");
    comparison.matches = false;
  }
  if (samePlaceholders(recorded.stderr) !== samePlaceholders(replayed.stderr)) {
    comparison.stderrDiff = firstDifference(recorded.stderr, replayed.stderr, "stderr");
    comparison.matches = false;
  }
  return comparison;
}

/** A `--secret` placeholder is new in each harness process: outputs compare equal whichever they hold. */
function samePlaceholders(text: string): string {
  return text.replace(PLACEHOLDER_PATTERN, "harness-secret-$1-…");
}

/** "exit 0", "timed out (exit 143)", "no exit code", as shown in a report. */
export function describeExit(output: Pick<RecordedOutput, "exitCode" | "timedOut">): string {
  const exit = output.exitCode === null ? "no exit code" : `exit ${output.exitCode}`;
  return output.timedOut ? `timed out (${exit})` : exit;
}

/**
 * A unified-diff-like excerpt from the first line where `recorded` and `replayed` differ: one line of
 * context before it, then up to three lines of each side. Texts must differ.
 */
export function firstDifference(recorded: string, replayed: string, stream: string): string[] {
  const a = linesOf(recorded);
  const b = linesOf(replayed);
  let i = 0;
  while (i < a.lines.length && i < b.lines.length && a.lines[i] === b.lines[i]) i += 1;
  const out = [`--- recorded ${stream}`, `+++ replayed ${stream}`, `@@ line ${i + 1} @@`];
  const context = i > 0 ? a.lines[i - 1] : undefined;
  if (context !== undefined) out.push(` ${clip(context)}`);
  if (i === a.lines.length && i === b.lines.length) {
    // Every line is equal: only the final newline differs.
    out.push(`\\ ${a.finalNewline ? "replayed" : "recorded"} output has no newline at the end`);
    return out;
  }
  out.push(...side(a.lines, i, "-"), ...side(b.lines, i, "+"));
  return out;
}

function side(lines: string[], from: number, mark: string): string[] {
  const shown = lines.slice(from, from + SHOWN_LINES).map((line) => `${mark}${clip(line)}`);
  const more = lines.length - from - SHOWN_LINES;
  if (more > 0) shown.push(`${mark}… ${more} more line${more === 1 ? "" : "s"}`);
  return shown;
}

function linesOf(text: string): { lines: string[]; finalNewline: boolean } {
  if (text === "") return { lines: [], finalNewline: false };
  const finalNewline = text.endsWith("\n");
  const lines = (finalNewline ? text.slice(0, -1) : text).split("\n");
  return { lines, finalNewline };
}

function clip(line: string): string {
  return line.length > SHOWN_CHARS ? `${line.slice(0, SHOWN_CHARS)}…` : line;
}
