/**
 * Rebuilds the conversation a transcript recorded, so `harness run --continue` / `--resume` can send it
 * as the next run's history: user texts, assistant turns (their content blocks as the writer recorded
 * them) and tool results (as `tool_result` blocks of the next user message), in file order, across
 * every run_start in the file (an interactive session has one per prompt, a continued run one more).
 *
 * The result is valid for the Messages API the way the loop keeps it (agent/conversation.ts): every
 * `tool_use` is answered in the next user message. A transcript cut off mid-turn (the process was
 * killed while a tool call ran) has tool_use blocks without results; they are answered here with an
 * error result saying the call did not complete, rather than dropping the turn: the model keeps what
 * it did and knows the command may have run in part. The file is not changed.
 *
 * The edits that kept the conversation within the context window are applied again where they were
 * made: after an assistant turn with a `compaction` block, what the block stands for is dropped; a
 * `context` record clears the tool results it names, or puts its summary in place of the messages
 * before the last turn. So the rebuilt conversation is the one the next request of the run would
 * have sent, not the whole history (the transcript keeps that).
 *
 * Secrets were masked when the transcript was written (record-secrets.ts), so the rebuilt
 * conversation holds "[REDACTED]" where the original had a key; signed blocks (thinking, compaction)
 * were written verbatim. The API binds each thinking block to everything before it: after the first
 * point where the rebuilt conversation differs from what the model was sent (a masked secret, a
 * block withheld because it held an API key), every thinking block is left out, as the API's docs
 * say to do when secrets are removed (earlier turns' thinking may be left out; thinking before the
 * change stays valid). A compaction block starts afresh: what came before it is not sent.
 *
 * An MCP session (`harness mcp`) is a run without a conversation: its calls came from a client whose
 * model harness never saw. Its tool results add nothing to the messages (they answer no tool_use),
 * and `mcpSession` says when the last run is one, for `--continue` to refuse in words.
 */

import {
  applyClearedResults,
  applySummary,
  type ClearedResult,
  dropBeforeCompaction,
} from "../agent/context/context-edits.js";
import {
  appendAssistant,
  appendUserBlocks,
  appendUserText,
  type ToolResultBlockParam,
  toolResultBlock,
  toolUses,
} from "../agent/conversation.js";
import { ConfigError } from "../errors.js";
import type { ContentBlock, MessageParam } from "../model/model-client.js";
import { readTranscriptFile } from "./read-transcript-file.js";
import {
  type AssistantRecord,
  type ContextRecord,
  MCP_SESSION_TASK,
  type RunStartRecord,
  type ToolResultRecord,
  type UncheckedRecord,
  type UserRecord,
  type WithheldBlock,
} from "./transcript-records.js";
import { type TranscriptRow, transcriptRows } from "./transcript-rows.js";

/** The answer given to a recorded tool call whose result was never recorded. */
export const INCOMPLETE_CALL_TEXT =
  "Error: this tool call did not complete: the run ended (the harness process stopped) before its result was recorded. Its command may have run in part.";

/** What a transcript says about its conversation. */
export interface RecordedConversation {
  /** The conversation in API shape: roles alternate, starting with "user"; no tool_use unanswered. */
  messages: MessageParam[];
  /** run_start records in the file: one per run or prompt. */
  runs: number;
  /** The workspace the last run_start records (a real host path), when it records one. */
  workspace?: string;
  /** The process that wrote the last run_start, when it says. */
  pid?: number;
  /** True when the last run has its run_end record. */
  ended: boolean;
  /** True when the last run is an MCP session: tool calls from an MCP client, no conversation. */
  mcpSession: boolean;
  /** Ids of tool calls that had no result recorded and were answered with `INCOMPLETE_CALL_TEXT`. */
  incompleteCalls: string[];
  /**
   * The highest `out-N` any recorded tool result or cleared result names (0: none), dropped
   * messages included: new saved outputs get higher ids.
   */
  highestOutputId: number;
  /** Thinking the rebuilt conversation cannot send back (see the file's comment). */
  thinking: ThinkingLeftOut;
  /**
   * The API's compaction block was withheld (it held an API key): without it the conversation
   * before it cannot be sent. Its line, and the tool results recorded before it (a fork from that
   * step does not need it).
   */
  withheldCompaction?: { line: number; steps: number };
}

/** Thinking blocks of the recorded conversation that the rebuilt one leaves out. */
export interface ThinkingLeftOut {
  /** How many, besides those `dropThinking` left out. */
  leftOut: number;
  /** Where the transcript first differs from what the model was sent, before the first left out. */
  because?: { line: number; why: "masked" | "withheld" };
  /**
   * The last turn made tool calls (answered in the last user message, so the turn goes on) and lost
   * thinking: the API refuses tool results without their turn's thinking while thinking is on.
   */
  openTurn: boolean;
}

export interface RebuildOptions {
  /** Leave out every thinking block: the continuing run has thinking off (the API's docs say to). */
  dropThinking?: boolean;
}

/** Where a fork cuts a conversation: after this many tool calls (steps) have their result. */
export interface ConversationCut {
  /** Steps kept: the conversation ends with the result of the transcript's `steps`th tool call. */
  steps: number;
  /** The answer given to the calls of that turn after the cut (they are not in the fork). */
  notRunText: string;
}

/** Reads the transcript at `path`. Rejects with `ConfigError` naming the file (and the line). */
export async function readConversation(
  path: string,
  cut?: ConversationCut,
  options: RebuildOptions = {},
): Promise<RecordedConversation> {
  return readTranscriptFile(path, (text) => parseConversation(text, cut, options));
}

/** Parses JSONL transcript text. Throws `ConfigError` naming the first line that does not fit. */
export function parseConversation(
  text: string,
  cut?: ConversationCut,
  options: RebuildOptions = {},
): RecordedConversation {
  const builder = new ConversationBuilder(options.dropThinking === true);
  let results = 0;
  // Lines after the cut are not read at all: a fork stands on the steps it keeps.
  if (cut?.steps !== 0)
    for (const { row, line } of transcriptRows(text)) {
      builder.add(row, line);
      if (row.type === "tool_result" && cut !== undefined && ++results >= cut.steps) break;
    }
  if (cut !== undefined && results < cut.steps)
    throw new ConfigError(
      `the transcript has ${results} tool call(s) with a result, fewer than ${cut.steps}`,
    );
  return builder.finish(cut?.notRunText);
}

type Row = TranscriptRow;

class ConversationBuilder {
  private readonly messages: MessageParam[] = [];
  /** tool_use ids of the last assistant turn not answered yet, in the turn's order. */
  private pending: string[] = [];
  private readonly incomplete: string[] = [];
  private runs = 0;
  private workspace: string | undefined;
  private pid: number | undefined;
  private ended = false;
  /** The current run is an MCP session. */
  private mcp = false;
  private highestOutputId = 0;
  private results = 0;
  /** Where the rebuilt conversation first differs from what was sent (since the last compaction). */
  private changed: ThinkingLeftOut["because"];
  private leftOut: Omit<ThinkingLeftOut, "openTurn"> = { leftOut: 0 };
  /** The last assistant turn lost thinking. */
  private lastTurnLost = false;
  private withheldCompaction: RecordedConversation["withheldCompaction"];

  constructor(private readonly dropThinking: boolean) {}

  add(row: Row, line: number): void {
    if (this.runs === 0 && row.type !== "run_start")
      fail(line, "expected a run_start record first (is this a harness transcript?)");
    // The other records are not part of the conversation: tool_call (its tool_use is in the assistant
    // turn), usage, notice, egress, and any type a later harness adds.
    switch (row.type) {
      case "run_start":
        this.runStart(row, line);
        break;
      case "user":
        this.user(row, line);
        break;
      case "assistant":
        this.assistant(row, line);
        break;
      case "tool_result":
        this.toolResult(row, line);
        break;
      case "context":
        this.context(row, line);
        break;
      case "run_end":
        this.ended = true;
        break;
    }
  }

  /** `notRunText`: the answer to calls still open (a fork's cut); by default they did not complete. */
  finish(notRunText?: string): RecordedConversation {
    if (this.runs === 0) throw new ConfigError("the file has no records");
    this.answerPending(notRunText);
    const last = this.messages.findLast((message) => message.role === "assistant");
    const goesOn = typeof last?.content !== "string" && last?.content.some((b) => b.type === "tool_use");
    const conversation: RecordedConversation = {
      messages: this.messages,
      runs: this.runs,
      ended: this.ended,
      mcpSession: this.mcp,
      incompleteCalls: this.incomplete,
      highestOutputId: this.highestOutputId,
      thinking: { ...this.leftOut, openTurn: goesOn === true && this.lastTurnLost },
    };
    if (this.workspace !== undefined) conversation.workspace = this.workspace;
    if (this.pid !== undefined) conversation.pid = this.pid;
    if (this.withheldCompaction !== undefined) conversation.withheldCompaction = this.withheldCompaction;
    return conversation;
  }

  private runStart(row: UncheckedRecord<RunStartRecord>, line: number): void {
    this.answerPending();
    this.runs += 1;
    this.ended = false;
    const { workspace, pid } = row;
    if (workspace !== undefined && typeof workspace !== "string")
      fail(line, 'run_start "workspace" must be a string');
    if (pid !== undefined && !(Number.isSafeInteger(pid) && (pid as number) > 0))
      fail(line, 'run_start "pid" must be a positive integer');
    this.workspace = workspace;
    this.pid = pid as number | undefined;
    this.mcp = row.mcpSession === true || row.task === MCP_SESSION_TASK;
  }

  private user(row: UncheckedRecord<UserRecord>, line: number): void {
    const text = row.text;
    if (typeof text !== "string") fail(line, 'user record needs a string "text"');
    this.answerPending();
    appendUserText(this.messages, text);
    if (row.masked === true) this.noteChange(line, "masked");
  }

  private assistant(row: UncheckedRecord<AssistantRecord>, line: number): void {
    const content = row.content;
    if (!Array.isArray(content) || !content.every(isBlock))
      fail(line, 'assistant record needs "content", a list of blocks with a string "type"');
    this.answerPending();
    if (this.messages.length === 0) fail(line, "an assistant turn before any user message");
    const masked = new Set(Array.isArray(row.maskedBlocks) ? row.maskedBlocks : []);
    const blocks: ContentBlock[] = [];
    let lost = false;
    for (const [i, block] of (content as Array<ContentBlock | WithheldBlock>).entries()) {
      if (block.type === "withheld") {
        if (block.block === "compaction") this.withheldCompaction ??= { line, steps: this.results };
        else lost = this.leaveOut(line, "withheld") || lost;
        continue;
      }
      // What came before a compaction block is not sent: the conversation starts afresh there.
      if (block.type === "compaction" && block.content != null) {
        this.changed = undefined;
        this.leftOut = { leftOut: 0 };
      }
      if (block.type === "thinking" || block.type === "redacted_thinking") {
        if (this.dropThinking) continue;
        if (this.changed !== undefined) {
          lost = this.leaveOut(line) || lost;
          continue;
        }
      }
      blocks.push(block);
      if (masked.has(i)) this.noteChange(line, "masked");
    }
    for (const use of toolUses(blocks))
      if (typeof use.id !== "string" || use.id === "") fail(line, 'a tool_use block needs a string "id"');
    // After pause_turn the continuation joins the paused turn: what the turn lost adds up.
    const joins = this.messages.at(-1)?.role === "assistant";
    appendAssistant(this.messages, blocks);
    if (blocks.some((block) => block.type === "compaction")) dropBeforeCompaction(this.messages);
    this.pending = toolUses(blocks).map((use) => use.id);
    this.lastTurnLost = joins ? this.lastTurnLost || lost : lost;
  }

  /** The rebuilt conversation differs from what the model was sent from here on. */
  private noteChange(line: number, why: "masked" | "withheld"): void {
    this.changed ??= { line, why };
  }

  /** One thinking block left out (withheld, or after a change). Returns true. */
  private leaveOut(line: number, withheld?: "withheld"): boolean {
    if (withheld !== undefined) this.noteChange(line, withheld);
    this.leftOut.leftOut += 1;
    if (this.leftOut.because === undefined && this.changed !== undefined) this.leftOut.because = this.changed;
    return true;
  }

  /** An edit made to fit the context window, applied at the same point. */
  private context(
    row: UncheckedRecord<Extract<ContextRecord, { kind: "clear_tool_results" }>> &
      UncheckedRecord<Extract<ContextRecord, { kind: "summary" }>>,
    line: number,
  ): void {
    if (row.kind === "clear_tool_results") {
      const cleared = row.cleared;
      if (!Array.isArray(cleared) || !cleared.every(isCleared))
        fail(line, 'context record "cleared" must be a list of {toolUseId, placeholder} strings');
      for (const { placeholder } of cleared) this.noteOutputIds(placeholder);
      applyClearedResults(this.messages, cleared);
    } else if (row.kind === "summary") {
      const { summary, keptMessages } = row;
      if (typeof summary !== "string") fail(line, 'context record needs a string "summary"');
      if (!Number.isSafeInteger(keptMessages) || (keptMessages as number) < 0)
        fail(line, 'context record "keptMessages" must be a whole number');
      this.answerPending();
      this.messages.splice(
        0,
        this.messages.length,
        ...applySummary(this.messages, summary, keptMessages as number),
      );
      // A masked summary is not what the model was sent: the kept turn's thinking comes after it.
      if (row.masked === true) {
        this.noteChange(line, "masked");
        this.leaveOutThinkingOfKeptTurns(line);
      }
    }
    // A server compaction's record only reports it: its assistant turn already dropped what it stands for.
  }

  private leaveOutThinkingOfKeptTurns(line: number): void {
    for (const [i, message] of this.messages.entries()) {
      if (message.role !== "assistant" || typeof message.content === "string") continue;
      const kept = message.content.filter((b) => b.type !== "thinking" && b.type !== "redacted_thinking");
      // A turn of thinking alone stays whole: an empty message is not a message.
      if (kept.length === 0 || kept.length === message.content.length) continue;
      for (let n = kept.length; n < message.content.length; n++) this.lastTurnLost = this.leaveOut(line);
      this.messages[i] = { ...message, content: kept };
    }
  }

  private noteOutputIds(text: string): void {
    for (const match of text.matchAll(/\bout-(\d{1,9})\b/g))
      this.highestOutputId = Math.max(this.highestOutputId, Number(match[1]));
  }

  private toolResult(row: UncheckedRecord<ToolResultRecord>, line: number): void {
    const { id, content, isError } = row;
    if (typeof id !== "string") fail(line, 'tool_result record needs a string "id"');
    if (typeof content !== "string") fail(line, 'tool_result record needs a string "content"');
    this.noteOutputIds(content);
    // An MCP client's call: no tool_use of harness's model to answer.
    if (this.mcp) return;
    const at = this.pending.indexOf(id);
    if (at < 0) fail(line, `tool_result '${id}' answers no tool_use of the assistant turn before it`);
    this.pending.splice(at, 1);
    this.results += 1;
    appendUserBlocks(this.messages, [toolResultBlock({ toolUseId: id, content, isError: isError === true })]);
    if (row.masked === true) this.noteChange(line, "masked");
  }

  /** Answers the last turn's tool calls that have no result: the run stopped while they ran. */
  private answerPending(notRunText?: string): void {
    if (this.pending.length === 0) return;
    const blocks: ToolResultBlockParam[] = this.pending.map((id) =>
      toolResultBlock({ toolUseId: id, content: notRunText ?? INCOMPLETE_CALL_TEXT, isError: true }),
    );
    if (notRunText === undefined) this.incomplete.push(...this.pending);
    this.pending = [];
    appendUserBlocks(this.messages, blocks);
  }
}

function isCleared(value: unknown): value is ClearedResult {
  const entry = value as Partial<ClearedResult> | null;
  return typeof entry?.toolUseId === "string" && typeof entry.placeholder === "string";
}

function isBlock(value: unknown): boolean {
  return (
    typeof value === "object" && value !== null && typeof (value as { type?: unknown }).type === "string"
  );
}

function fail(line: number, message: string): never {
  throw new ConfigError(`line ${line}: ${message}`);
}
