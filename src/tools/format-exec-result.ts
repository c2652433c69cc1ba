/**
 * What the model sees of a command: stdout and stderr apart, the exit code always, and a plain note
 * for everything that makes the output incomplete or surprising (cut, timed out, cancelled, OOM).
 * Nothing is silently merged or dropped; terminal control characters are shown as escapes.
 *
 * Long output is cut once, by the sandbox: it keeps the head and the tail of each stream and marks
 * the cut with a line saying how many bytes went. This layer does not cut again; it only adds where
 * the whole output went (saved for `read_output`) or how to get at it.
 */
import type { ExecResult } from "../sandbox/sandbox.js";
import { visibleControls } from "../text/visible-controls.js";
import type { SavedOutput } from "./output-store.js";

/**
 * Layout (sections omitted when empty):
 * ```
 * <stdout>…</stdout>
 * <stderr>…</stderr>
 * <exit_code>1</exit_code>
 * <note>…</note>
 * ```
 * `saved`: where the whole output of a cut command was kept for `read_output`.
 */
export function formatExecResult(result: ExecResult, saved: readonly SavedOutput[] = []): string {
  const stdout = visibleControls(trimFinalNewline(result.stdout));
  const stderr = visibleControls(trimFinalNewline(result.stderr));
  const parts: string[] = [];
  if (stdout !== "") parts.push(`<stdout>\n${stdout}\n</stdout>`);
  if (stderr !== "") parts.push(`<stderr>\n${stderr}\n</stderr>`);
  if (parts.length === 0) parts.push("(no output)");
  parts.push(`<exit_code>${result.exitCode ?? "none"}</exit_code>`);
  for (const note of notesFor(result, saved)) parts.push(`<note>${note}</note>`);
  return parts.join("\n");
}

function notesFor(result: ExecResult, saved: readonly SavedOutput[]): string[] {
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
  if (result.isTruncated) {
    const where =
      saved.length > 0
        ? savedWhere(saved)
        : "Redirect big output to a file and inspect it with head, tail or grep.";
    notes.push(`Output was too long: the middle was cut where marked. ${where}`);
  }
  for (const notice of result.notices) notes.push(`Sandbox notice: ${notice}`);
  return notes;
}

function savedWhere(saved: readonly SavedOutput[]): string {
  const streams = saved.map((o) =>
    o.savedBytes < o.totalBytes
      ? `${o.stream}: first ${bytes(o.savedBytes)} of ${bytes(o.totalBytes)}`
      : `${o.stream}: ${bytes(o.totalBytes)}`,
  );
  return `The full output was saved as ${saved[0]?.id ?? ""} (${streams.join("; ")}): read it with the read_output tool by line range or grep.`;
}

function bytes(n: number): string {
  return `${n.toLocaleString("en-US")} bytes`;
}

function trimFinalNewline(text: string): string {
  return text.endsWith("\n") ? text.slice(0, -1) : text;
}
