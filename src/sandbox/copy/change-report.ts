/**
 * What the user reads before deciding to apply copy mode's changes: one line per changed path with
 * the counts, then unified diffs of changed text files, capped per file and in total so a run that
 * rewrote thousands of files still prints a readable page.
 */

import { sanitizeForTerminal } from "../../terminal/sanitize.js";
import { unifiedDiff } from "../../text/text-diff.js";
import { type BeneathRoot, withBeneath } from "../host/paths/beneath.js";
import { type Change, type ChangeCounts, displayPath, formatChange } from "./tree-diff.js";
import { openRegularFile } from "./workspace-scan.js";

export interface ReportLimits {
  /** Larger files are not diffed ("file too large to diff"). */
  fileBytes: number;
  /** Diff lines shown per file. */
  fileLines: number;
  /** Diff lines shown in total. */
  totalLines: number;
}

export const DEFAULT_REPORT_LIMITS: ReportLimits = {
  fileBytes: 256 * 1024,
  fileLines: 200,
  totalLines: 2000,
};

export function summarizeChanges(
  changes: readonly Change[],
  counts: ChangeCounts,
  conflicts: readonly string[] = [],
  refused: readonly { path: string; reason: string }[] = [],
): string {
  const lines = changes.map(formatChange);
  for (const path of conflicts) {
    lines.push(`! ${displayPath(path)}: also changed on the host during the run; it will be left as it is`);
  }
  // A reason can quote a path the sandbox chose: one line, whatever it holds.
  for (const r of refused)
    lines.push(`! ${displayPath(r.path)}: ${sanitizeForTerminal(r.reason, { oneLine: true })}`);
  const total = counts.added + counts.modified + counts.deleted;
  lines.push(
    `${total} change${total === 1 ? "" : "s"}: ${counts.added} added, ${counts.modified} modified, ${counts.deleted} deleted`,
  );
  return `${lines.join("\n")}\n`;
}

function isBinary(content: Buffer): boolean {
  if (content.subarray(0, 8000).includes(0)) return true;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(content);
    return false;
  } catch {
    return true;
  }
}

async function readHostFile(
  beneath: BeneathRoot,
  path: string,
  limit: number,
): Promise<Buffer | "too large"> {
  const handle = await openRegularFile(beneath, path);
  try {
    if ((await handle.stat()).size > limit) return "too large";
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** The diff of one changed file, or a one-line note on why there is none. */
async function fileDiff(
  c: Change,
  beneath: BeneathRoot,
  contents: Map<string, Buffer>,
  limits: ReportLimits,
): Promise<string> {
  const name = displayPath(c.path);
  const header = `--- ${c.before?.type === "file" ? `a/${name}` : "/dev/null"}\n+++ b/${name}\n`;
  if (c.after?.hardLinkTo !== undefined) return `${header}(hard link: content not shown)\n`;
  // Empty files are not kept (sandbox-tree.ts): nothing to keep.
  const after = contents.get(c.path) ?? (c.after?.size === 0 ? Buffer.alloc(0) : undefined);
  if (!after) {
    const size = c.after?.size ?? 0;
    return size > limits.fileBytes
      ? `${header}file too large to diff (${size} bytes)\n`
      : `${header}diff not shown: too many changed files\n`;
  }
  let before: Buffer = Buffer.alloc(0);
  if (c.before?.type === "file") {
    const read = await readHostFile(beneath, c.path, limits.fileBytes).catch(() => undefined);
    if (read === undefined) return `${header}host file could not be read for the diff\n`;
    if (read === "too large") return `${header}file too large to diff (${c.before.size} bytes)\n`;
    before = read;
  }
  if (isBinary(before) || isBinary(after)) return `${header}binary file differs\n`;
  const diff = unifiedDiff(before.toString("utf8"), after.toString("utf8"), {
    before: c.before?.type === "file" ? `a/${name}` : "/dev/null",
    after: `b/${name}`,
  });
  if (diff === undefined) return `${header}file changed too much to diff\n`;
  return diff === "" ? `${header}(empty file)\n` : diff;
}

/** Unified diffs of the added and modified files, capped by `limits`. */
export async function renderDiffs(
  changes: readonly Change[],
  root: string,
  contents: Map<string, Buffer>,
  limits: ReportLimits = DEFAULT_REPORT_LIMITS,
): Promise<string> {
  const files = changes.filter(
    (c) => c.kind !== "D" && c.after?.type === "file" && c.differs.join() !== "mode",
  );
  let out = "";
  let shown = 0;
  await withBeneath(root, async (beneath) => {
    for (const [index, c] of files.entries()) {
      if (shown >= limits.totalLines) {
        out += `… diffs of ${files.length - index} more file(s) not shown\n`;
        break;
      }
      const lines = (await fileDiff(c, beneath, contents, limits)).split("\n");
      if (lines.at(-1) === "") lines.pop();
      const room = Math.min(limits.fileLines, limits.totalLines - shown);
      const cut = lines.length > room ? lines.length - room : 0;
      out += `${lines.slice(0, room).join("\n")}\n`;
      if (cut > 0) out += `… ${cut} more line(s) of this diff not shown\n`;
      shown += Math.min(lines.length, room);
    }
  });
  return out;
}
