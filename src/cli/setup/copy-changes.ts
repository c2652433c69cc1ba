/**
 * The end of a copy-mode run, exec or shell, and `harness apply ID`: show on stderr what the sandbox
 * changed in its copy of the workspace, then write it to the host only on `--apply` (`--yes`) or a
 * "y" typed at a terminal.
 */
import { createInterface } from "node:readline/promises";
import { CopyOverLimitError } from "../../errors.js";
import { faultPoint } from "../../faults/fault-point.js";
import { displayPath } from "../../sandbox/copy/tree-diff.js";
import type { CopiedWorkspace, Sandbox } from "../../sandbox/sandbox.js";
import { sanitizeForTerminal } from "../../terminal/sanitize.js";

export interface ReviewIo {
  stdin: NodeJS.ReadStream;
  stderr: NodeJS.WritableStream;
  /** Aborted once the session is ending (SIGTERM, SIGHUP…): nobody is asked any more. */
  ending?: AbortSignal;
}

/** The process's own stdin and stderr, and the session's end. */
export function processReviewIo(ending: AbortSignal): ReviewIo {
  return { stdin: process.stdin, stderr: process.stderr, ending };
}

/** What happened to the changes, for the caller's exit code and for tests. */
export type ReviewOutcome = "no-sandbox-changes" | "applied" | "not-applied" | "bind-mode";

async function confirm(io: ReviewIo, question: string): Promise<boolean> {
  const rl = createInterface({ input: io.stdin, output: io.stderr, terminal: true });
  // Ctrl-C or Ctrl-D at the question is a "no" (without a listener readline would only pause).
  rl.on("SIGINT", () => rl.close());
  try {
    const answer = await rl.question(question).catch(() => "");
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}

/** How a review words its question and what a "no" does. */
export interface ReviewOptions {
  /** The flag that applies without asking, for the line that says how: `--apply` (default), `--yes`. */
  applyFlag?: string;
  /**
   * A "no" typed at the question drops the copy (the session's end, where the copy is the session's);
   * false for `harness apply ID`, where the kept copy stays for a later apply or `harness rm`.
   */
  noDrops?: boolean;
}

/**
 * `apply`: true for `--apply`, false for `--no-apply`, undefined to ask when stdin is a terminal
 * (and otherwise leave the host untouched). Does nothing in bind mode.
 */
export async function reviewCopyChanges(
  sandbox: Sandbox,
  apply: boolean | undefined,
  io: ReviewIo = { stdin: process.stdin, stderr: process.stderr },
): Promise<ReviewOutcome> {
  const copied = sandbox.copy;
  if (!copied) return "bind-mode";
  return reviewCopy(copied, sandbox.description.workspace, apply, io);
}

/**
 * Shows what the sandbox changed in its copy of `root`, then applies it when asked. The copy is
 * settled (removed when the sandbox stops) once its changes landed, there were none, or the user
 * dropped them (`--no-apply`, a "no" at the question); otherwise (no terminal and no `--apply`, the
 * session ending, an apply that failed) it is kept for `harness apply ID` (docs/copy-mode.md).
 */
export async function reviewCopy(
  copied: Pick<CopiedWorkspace, "exportChanges" | "applyChanges" | "settle">,
  root: string,
  apply: boolean | undefined,
  io: ReviewIo,
  options: ReviewOptions = {},
): Promise<ReviewOutcome> {
  const applyFlag = options.applyFlag ?? "--apply";
  // Paths and file contents come from the sandbox: never raw to the terminal.
  const write = (text: string) => io.stderr.write(sanitizeForTerminal(text));
  // The fault suite kills harness here: the sandbox still running, nothing reviewed yet.
  faultPoint("review:start");
  const changes = await copied.exportChanges().catch((error: unknown) => {
    // Over the copy limits it can never be read back whole, so never applied: nothing to keep.
    if (error instanceof CopyOverLimitError) copied.settle();
    throw error;
  });
  for (const s of changes.skipped)
    write(`harness: not copied, not compared: ${displayPath(s.path)} (${s.reason})\n`);
  for (const name of changes.unsafeNames)
    write(`harness: ignored unsafe name in the sandbox: ${displayPath(name)}\n`);
  if (changes.changes.length === 0) {
    write("harness: copy mode: the sandbox changed nothing in the workspace\n");
    copied.settle();
    return "no-sandbox-changes";
  }
  write(`harness: copy mode: the sandbox's changes to ${root}:\n${changes.summary}`);
  if (changes.diff !== "") write(`\n${changes.diff}\n`);
  const ask = io.stdin.isTTY === true && io.ending?.aborted !== true;
  const decided = apply ?? (ask ? await confirm(io, `Apply these changes to ${root}? [y/N] `) : undefined);
  if (!decided) {
    // A "no" asked and answered while the session still goes on; a question cut short by the
    // session's end (SIGTERM, SIGHUP) answered nothing.
    const answeredNo = apply === undefined && ask && io.ending?.aborted !== true;
    const drop = apply === false || (answeredNo && options.noDrops !== false);
    const why =
      apply === false
        ? "--no-apply"
        : io.ending?.aborted
          ? `the session is ending; ${applyFlag} applies them`
          : io.stdin.isTTY
            ? "not confirmed"
            : `pass ${applyFlag} to apply them`;
    write(`harness: changes not applied (${why})${drop ? "; the sandbox's copy is dropped" : ""}\n`);
    if (drop) copied.settle();
    return "not-applied";
  }
  const result = await copied.applyChanges(changes);
  copied.settle();
  write(
    `harness: applied to ${root}: ${result.written.length} written, ${result.deleted.length} deleted, ${result.refused.length} refused\n`,
  );
  for (const r of result.refused) write(`harness: refused ${displayPath(r.path)}: ${r.reason}\n`);
  for (const n of result.notes) write(`harness: note ${displayPath(n.path)}: ${n.reason}\n`);
  return "applied";
}
