/**
 * What the model sees of a command: stdout and stderr apart, the exit code always, and a plain note
 * for everything that makes the output incomplete or surprising (cut, timed out, cancelled, OOM).
 * Unlike the seed (`(r.stdout + r.stderr)[:50000]`), nothing is silently merged or dropped.
 */
import type { ExecResult } from "../sandbox/sandbox.js";
import { MODEL_OUTPUT_MAX_CHARS, truncateMiddle } from "./truncate.js";

export interface FormatExecOptions {
  /** Cap on stdout + stderr characters shown to the model (head and tail kept). Default 30,000. */
  maxChars?: number;
}

/**
 * Layout (sections omitted when empty):
 * ```
 * <stdout>…</stdout>
 * <stderr>…</stderr>
 * <exit_code>1</exit_code>
 * <note>…</note>
 * ```
 */
export function formatExecResult(result: ExecResult, options: FormatExecOptions = {}): string {
  const maxChars = options.maxChars ?? MODEL_OUTPUT_MAX_CHARS;
  const stdout = trimFinalNewline(result.stdout);
  const stderr = trimFinalNewline(result.stderr);
  const stderrBudget = Math.min(stderr.length, Math.max(Math.floor(maxChars / 2), maxChars - stdout.length));
  const shownStdout = truncateMiddle(stdout, maxChars - stderrBudget).text;
  const shownStderr = truncateMiddle(stderr, stderrBudget).text;

  const parts: string[] = [];
  if (shownStdout !== "") parts.push(`<stdout>\n${shownStdout}\n</stdout>`);
  if (shownStderr !== "") parts.push(`<stderr>\n${shownStderr}\n</stderr>`);
  if (parts.length === 0) parts.push("(no output)");
  parts.push(`<exit_code>${result.exitCode ?? "none"}</exit_code>`);
  for (const note of notesFor(result)) parts.push(`<note>${note}</note>`);
  return parts.join("\n");
}

function notesFor(result: ExecResult): string[] {
  const notes: string[] = [];
  if (result.timedOut) {
    const why = result.shortMessage || "The command timed out";
    notes.push(`${why}; it was killed. The output above is what it printed before that (partial).`);
  } else if (result.isCanceled) {
    notes.push("The command was cancelled by the user and killed; the output above is partial.");
  } else if (result.exitCode === undefined && result.shortMessage !== "") {
    notes.push(`The command did not run to completion: ${result.shortMessage}`);
  }
  if (result.oomKilled) {
    notes.push(
      "A process of this command was killed by the kernel's out-of-memory killer. Use less memory (smaller inputs, fewer parallel jobs).",
    );
  }
  if (result.isTruncated) notes.push(truncationNote(result));
  for (const notice of result.notices) notes.push(`Sandbox notice: ${notice}`);
  return notes;
}

function truncationNote(result: ExecResult): string {
  const cut: string[] = [];
  for (const [name, text, total] of [
    ["stdout", result.stdout, result.stdoutBytes],
    ["stderr", result.stderr, result.stderrBytes],
  ] as const) {
    const kept = Buffer.byteLength(text, "utf8");
    if (total > kept) cut.push(`${name} was ${bytes(total)} in total, ${bytes(kept)} kept`);
  }
  const detail = cut.length > 0 ? `${cut.join("; ")}. ` : "";
  return `Output was too long and was cut (head and tail kept): ${detail}Redirect big output to a file and inspect it with head, tail or grep.`;
}

function bytes(n: number): string {
  return `${n.toLocaleString("en-US")} bytes`;
}

function trimFinalNewline(text: string): string {
  return text.endsWith("\n") ? text.slice(0, -1) : text;
}
