/**
 * How a replay is shown: compact lines for a terminal (one per call, a short diff under a mismatch)
 * or one JSON object. Commands and output come from the sandbox and the transcript, so every piece
 * of text goes through sanitizeForTerminal first (control characters shown as escapes).
 */
import { sanitizeForTerminal } from "../terminal/sanitize.js";
import { describeExit } from "./compare.js";
import type { CallReplay, ReplayReport } from "./replay.js";

const MARKS = { match: "✓", mismatch: "✗", skipped: "-" } as const;
const COMMAND_CHARS = 100;

/** The lines for one call: "  2 ✗ python3 hello.py", then details when it did not match. */
export function formatCall(call: CallReplay): string[] {
  const lines = [`${String(call.n).padStart(3)} ${MARKS[call.status]} ${shownCommand(call.command)}`];
  const detail = (text: string) => lines.push(`      ${safe(text)}`);
  if (call.status === "skipped") detail(`skipped: ${call.reason ?? ""}`);
  if (call.error !== undefined) detail(`could not run: ${call.error.split("\n")[0] ?? ""}`);
  const { recorded, replayed, comparison } = call;
  if (recorded && replayed && comparison && !comparison.exitMatches)
    detail(`recorded ${describeExit(recorded)}, replayed ${describeExit(replayed)}`);
  for (const line of [...(comparison?.stdoutDiff ?? []), ...(comparison?.stderrDiff ?? [])]) detail(line);
  return lines;
}

/** The closing line: "reproduced: …" or "diverged: …". */
export function formatSummary(report: ReplayReport): string {
  const { total, matched, diverged, skipped } = report.summary;
  const replayed = matched + diverged;
  const skippedNote = skipped > 0 ? `, ${skipped} skipped` : "";
  if (report.interrupted)
    return `interrupted: ${replayed} of ${total - skipped} calls replayed (${diverged} diverged)${skippedNote}`;
  if (report.reproduced) return `reproduced: ${matched} of ${replayed} replayed calls matched${skippedNote}`;
  const which = report.calls.filter((call) => call.status === "mismatch").map((call) => call.n);
  return `diverged: ${diverged} of ${replayed} replayed calls differed (call${which.length > 1 ? "s" : ""} ${which.join(", ")})${skippedNote}`;
}

/** Where the replay ran, for the JSON report. */
export interface ReplayContext {
  /** The transcript file as given. */
  transcript: string;
  /** The host workspace the calls ran in. */
  workspace: string;
  /** False when the workspace was a temporary directory that has been removed. */
  workspaceKept: boolean;
  /** Whether only exit codes were compared. */
  ignoreOutput: boolean;
}

/**
 * The whole replay as one JSON-serialisable object (`--output-format json`). Its text is sanitized
 * too (JSON escapes C0 controls but not C1 or bidi characters); the transcript has the exact bytes.
 */
export function reportToJson(report: ReplayReport, context: ReplayContext): Record<string, unknown> {
  return {
    ...context,
    reproduced: report.reproduced,
    interrupted: report.interrupted,
    summary: report.summary,
    calls: report.calls.map((call) => ({
      n: call.n,
      id: call.id,
      command: sanitizeForTerminal(call.command),
      status: call.status,
      ...(call.reason === undefined ? {} : { reason: sanitizeForTerminal(call.reason) }),
      ...(call.error === undefined ? {} : { error: sanitizeForTerminal(call.error) }),
      ...(call.recorded ? { recorded: exitOf(call.recorded) } : {}),
      ...(call.replayed ? { replayed: exitOf(call.replayed) } : {}),
      ...diffOf(call),
    })),
  };
}

function exitOf(output: { exitCode: number | null; timedOut: boolean }) {
  return { exitCode: output.exitCode, timedOut: output.timedOut };
}

function diffOf(call: CallReplay): Record<string, unknown> {
  const diff: Record<string, string[]> = {};
  if (call.comparison?.stdoutDiff)
    diff["stdout"] = call.comparison.stdoutDiff.map((line) => sanitizeForTerminal(line));
  if (call.comparison?.stderrDiff)
    diff["stderr"] = call.comparison.stderrDiff.map((line) => sanitizeForTerminal(line));
  return Object.keys(diff).length > 0 ? { diff } : {};
}

function shownCommand(command: string): string {
  const [first = ""] = command.split("\n");
  const more = command.includes("\n") ? " …" : "";
  const clipped = first.length > COMMAND_CHARS ? `${first.slice(0, COMMAND_CHARS)}…` : first;
  return safe(`${clipped}${more}`) || "(no command)";
}

/** One line of untrusted text, safe for a terminal and still one line; a CR shows as `\r` (CRLF output). */
function safe(text: string): string {
  return sanitizeForTerminal(text.replace(/\r/g, "\\r")).replace(/\n/g, "\\n");
}
