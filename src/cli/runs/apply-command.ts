/**
 * `harness apply ID`: a kept copy's changes (docs/copy-mode.md), reviewed and applied exactly as at
 * the end of the session that made it (setup/copy-changes.ts, the journaled apply), then the copy
 * removed; `harness rm ID` drops one instead.
 */
import { ConfigError } from "../../errors.js";
import { recoverApplies } from "../../sandbox/copy/journal/apply-commit.js";
import { claimJournal, keptCopyClaimId } from "../../sandbox/copy/journal/journal-claim.js";
import { connectDocker } from "../../sandbox/docker/engine/docker-client.js";
import { findKeptCopy, type KeptCopy, openKeptCopy } from "../../sandbox/docker/isolation/kept-copy.js";
import { sanitizeForTerminal } from "../../terminal/sanitize.js";
import { EXIT } from "../exit-codes.js";
import type { Interrupts } from "../session/interrupts.js";
import { processReviewIo, reviewCopy } from "../setup/copy-changes.js";

export interface ApplyFlags {
  /** Apply without asking (`--yes`, or `--apply` as at a session's end). */
  yes?: boolean;
  apply?: boolean;
}

export async function applyCommand(id: string, flags: ApplyFlags, interrupts: Interrupts): Promise<number> {
  const say = (line: string) =>
    process.stderr.write(`harness: ${sanitizeForTerminal(line, { oneLine: true })}\n`);
  const docker = await connectDocker();
  const kept = await findKeptCopy(docker, id);
  // One `harness apply` of a copy at a time: a second one would review a workspace the first is
  // changing, and race it to remove the copy.
  const claim = await claimJournal(keptCopyClaimId(kept.id));
  if (claim === undefined)
    throw new ConfigError(`another harness apply of ${kept.id} is running: let it finish, then look again`);
  try {
    return await applyKept(kept, flags, interrupts, docker, say);
  } finally {
    await claim.release();
  }
}

async function applyKept(
  kept: KeptCopy,
  flags: ApplyFlags,
  interrupts: Interrupts,
  docker: Awaited<ReturnType<typeof connectDocker>>,
  say: (line: string) => void,
): Promise<number> {
  const opened = await openKeptCopy(docker, kept, say);
  const root = opened.record.root;
  // An apply to this workspace that was killed is finished (or undone) before the workspace is read.
  for (const { line } of await recoverApplies(process.env, root)) say(line);
  const outcome = await reviewCopy(
    opened,
    root,
    flags.yes === true || flags.apply === true ? true : undefined,
    processReviewIo(interrupts.session.signal),
    { applyFlag: "--yes", noDrops: false },
  );
  if (await opened.close()) {
    say(
      outcome === "applied"
        ? `removed the kept copy ${kept.id}: its changes are applied`
        : `removed the kept copy ${kept.id}: it held no changes`,
    );
    return EXIT.ok;
  }
  say(
    `the copy stays kept as ${kept.id}: harness apply ${kept.id} --yes lands it, harness rm ${kept.id} drops it`,
  );
  return EXIT.error;
}
