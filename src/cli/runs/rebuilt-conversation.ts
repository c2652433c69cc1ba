/**
 * What `--continue`, `--resume` and `--fork` say, or refuse, about a conversation rebuilt from a
 * transcript that is not byte for byte what the model was sent (transcript/read-conversation.ts):
 * thinking after a masked secret or a withheld block is left out (one line); a turn that goes on
 * cannot go back without its thinking while thinking is on, and a withheld compaction block cannot
 * be stood in for (each refused in one line, before the sandbox opens).
 */
import { ConfigError } from "../../errors.js";
import type { RecordedConversation } from "../../transcript/read-conversation.js";

/** The lines to print about `conversation`; throws `ConfigError` when it cannot be sent. */
export function checkRebuiltConversation(
  conversation: RecordedConversation,
  flag: string,
  runId: string,
  thinkingOff: boolean,
): string[] {
  const compaction = conversation.withheldCompaction;
  if (compaction !== undefined)
    throw new ConfigError(
      `${flag}: the API's compaction block of run ${runId} (transcript line ${compaction.line}) was not recorded, because it held an Anthropic API key, and the conversation before it cannot be sent in its place: start a new run, or fork from before it (--fork ${runId}@${compaction.steps})`,
    );
  const { leftOut, because, openTurn } = conversation.thinking;
  if (leftOut === 0 || because === undefined) return [];
  const why =
    because.why === "masked"
      ? `a secret was masked at transcript line ${because.line}`
      : `a thinking block at transcript line ${because.line} held an Anthropic API key and was not recorded`;
  if (openTurn && !thinkingOff) {
    // A fork cuts the run after a step: it always ends inside the turn that made that call.
    const where = flag === "--fork" ? `the fork of run ${runId} ends` : `run ${runId} stopped`;
    throw new ConfigError(
      `${flag}: ${where} in the middle of a turn whose thinking cannot be sent back (${why}), and the API refuses a turn's tool results without its thinking while thinking is on: give --thinking off`,
    );
  }
  return [
    `left out ${leftOut} thinking block(s) of run ${runId}: ${why}, and the API takes thinking back only after the conversation it followed, unchanged`,
  ];
}
