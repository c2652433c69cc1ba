/**
 * What the model sees of a command: stdout and stderr apart, the exit code always, and a plain note
 * for everything that makes the output incomplete or surprising (cut, timed out, cancelled, OOM, a
 * network request the gateway refused, jobs still running in the background).
 * Nothing is silently merged or dropped; terminal control characters are shown as escapes, and so
 * are NULs and bytes that are not UTF-8 (by the sandbox): when any byte is not shown as itself, a
 * note says how many and how to get them exactly (issue 35).
 *
 * Long output is cut once, by the sandbox: it keeps the head and the tail of each stream and marks
 * the cut with a line saying how many bytes went. This layer does not cut again; it only adds where
 * the whole output went (saved for `read_output`) or how to get at it.
 */
import type { BackgroundProcess, EgressDenial, ExecResult } from "../sandbox/sandbox.js";
import { formatByteCount } from "../text/units.js";
import { controlBytes, visibleControls } from "../text/visible-controls.js";
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
  const notes = notesFor(result, saved);
  const notText = notTextNote(result);
  if (notText !== undefined) notes.push(notText);
  for (const note of notes) parts.push(`<note>${note}</note>`);
  return parts.join("\n");
}

/**
 * One line when the text above is not the command's bytes: how many bytes of each stream are shown
 * as escapes (NULs and bytes that are not UTF-8, escaped by the sandbox; controls, escaped here), and
 * how to see them exactly. The escapes alone are ambiguous: the command may have printed `\xff` as
 * four characters.
 */
function notTextNote(result: ExecResult): string | undefined {
  const counts = (["stdout", "stderr"] as const)
    .map((stream) => ({
      stream,
      bytes: (result.notTextBytes?.[stream] ?? 0) + controlBytes(result[stream]),
    }))
    .filter((c) => c.bytes > 0);
  if (counts.length === 0) return undefined;
  const held = counts.map((c) => `${c.stream}: ${c.bytes} byte${c.bytes === 1 ? "" : "s"}`).join("; ");
  const pipe = counts.some((c) => c.stream === "stdout") ? "| od -c" : "2>&1 >/dev/null | od -c";
  return `Not byte-exact: bytes that are not text (NUL, invalid UTF-8 or control characters) are shown above as escapes like \\x00, which printed text can look like (${held}). For the exact bytes, send the output through od: \`… ${pipe}\` (or to a file, then \`od -c FILE\`).`;
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
  notes.push(...egressNotes(result.egressDenied ?? []));
  const background = backgroundNote(result.background ?? []);
  if (background !== undefined) notes.push(background);
  return notes;
}

/** Background jobs named, at most this many; the rest are counted. */
const MAX_BACKGROUND_NOTES = 5;

/**
 * One line naming what still runs in the background, so a server started three calls ago is not
 * forgotten. "In this sandbox": another harness process sharing it may have started some of them.
 */
function backgroundNote(jobs: readonly BackgroundProcess[]): string | undefined {
  if (jobs.length === 0) return undefined;
  const shown = jobs
    .slice(0, MAX_BACKGROUND_NOTES)
    .map(({ command, ageSeconds }) => `\`${oneLine(command, 100)}\` (started ${ago(ageSeconds)})`);
  const more = jobs.length - shown.length;
  return `Still running in the background in this sandbox: ${shown.join(", ")}${more > 0 ? `, and ${more} more` : ""}.`;
}

function ago(seconds: number): string {
  if (seconds < 60) return `${seconds} s ago`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ago`;
  const days = Math.floor(seconds / 86_400);
  return `${days} day${days === 1 ? "" : "s"} ago`;
}

/** Distinct refused hosts named, at most this many; a command trying a thousand gets one line more. */
const MAX_EGRESS_NOTES = 5;

/**
 * One line per refused host (its first refusal's port and reason), so the model learns the host is
 * closed instead of retrying it. Host and reason come from the sandbox's request: controls shown as escapes.
 */
function egressNotes(denied: readonly EgressDenial[]): string[] {
  const byHost = new Map<string, EgressDenial>();
  for (const denial of denied) if (!byHost.has(denial.host)) byHost.set(denial.host, denial);
  const shown = [...byHost.values()].slice(0, MAX_EGRESS_NOTES);
  const notes = shown.map(
    ({ host, port, reason }) =>
      `Network: the request to ${oneLine(host, 256)}:${port} was refused by harness's gateway: ${oneLine(reason, 500)}`,
  );
  const more = byHost.size - shown.length;
  if (more > 0) notes.push(`Network: requests to ${more} more hosts were refused by harness's gateway too.`);
  return notes;
}

function oneLine(text: string, max: number): string {
  const flat = visibleControls(text.replace(/[\r\n]+/g, " "));
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

function savedWhere(saved: readonly SavedOutput[]): string {
  const streams = saved.map((o) =>
    o.savedBytes < o.totalBytes
      ? `${o.stream}: first ${formatByteCount(o.savedBytes)} of ${formatByteCount(o.totalBytes)}`
      : `${o.stream}: ${formatByteCount(o.totalBytes)}`,
  );
  return `The full output was saved as ${saved[0]?.id ?? ""} (${streams.join("; ")}): read it with the read_output tool by line range or grep.`;
}

function trimFinalNewline(text: string): string {
  return text.endsWith("\n") ? text.slice(0, -1) : text;
}
