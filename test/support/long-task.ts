/**
 * A task longer than the context window, for the context tests, the e2e and the bench: a scripted
 * model (through the fake Messages API) that runs `steps` bash commands one after another, each
 * printing `bytes` of output, then answers; a summary request (harness's own, client-side) is
 * answered with a summary. The script reads each request, so it follows whatever harness sends.
 */
import type { FakeMessagesApi, FakeScript, FakeTurn } from "./fake-messages-api.js";
import { textReply, toolUseReply } from "./fake-messages-api.js";

export interface LongTaskScript {
  /** Bash steps the model has asked for so far. */
  readonly stepsAsked: number;
  /** Summary requests harness made (client-side compaction). */
  readonly summaries: number;
}

export interface LongTaskOptions {
  steps: number;
  /** The command each step runs (default: prints 6 KB: 96 lines of 63 characters and a newline). */
  command?: (step: number) => string;
  /** Thinking before each tool call (a fake-signed thinking block). */
  thinking?: boolean;
  /**
   * Some steps use the text editor instead (Anthropic's tools): step 3 creates /workspace/notes.txt,
   * step 5 views it, every tenth step replaces its count.
   */
  edits?: boolean;
}

/** A command that prints about `bytes` of text in 64-byte lines, the step's number on every line. */
export function printingCommand(bytes: number): (step: number) => string {
  const lines = Math.max(1, Math.round(bytes / 64));
  return (step) => `yes '${`step ${step} `.padEnd(63, "x")}' | head -n ${lines}`;
}

/** Enqueues the scripted model on `api`; the returned object counts what it did. */
export function scriptLongTask(api: FakeMessagesApi, options: LongTaskOptions): LongTaskScript {
  const state = { stepsAsked: 0, summaries: 0 };
  const command = options.command ?? printingCommand(6 * 1024);
  const step: FakeScript = (request) => {
    const system = JSON.stringify(request.body.system ?? "");
    if (system.includes("You summarize the earlier part")) {
      state.summaries += 1;
      return textReply(`Summary ${state.summaries}: ran ${state.stepsAsked} steps of the long task so far.`);
    }
    if (state.stepsAsked >= options.steps) return textReply(`Done: all ${options.steps} steps ran.`);
    state.stepsAsked += 1;
    const edit = options.edits ? editAt(state.stepsAsked) : undefined;
    const turn: FakeTurn =
      edit === undefined
        ? toolUseReply("bash", { command: command(state.stepsAsked) })
        : toolUseReply("str_replace_based_edit_tool", edit);
    if (options.thinking)
      turn.content.unshift({ type: "thinking", thinking: `Step ${state.stepsAsked} next.` });
    return turn;
  };
  // One script per request: more than the steps, for summaries and the final answer.
  for (let i = 0; i < options.steps * 2 + 20; i++) api.enqueue(step);
  return state;
}

/** The editor call of step `n`, if it makes one. */
function editAt(n: number): Record<string, unknown> | undefined {
  const path = "/workspace/notes.txt";
  if (n === 3) return { command: "create", path, file_text: "steps done: 3\n" };
  if (n === 5) return { command: "view", path };
  if (n % 10 === 0) {
    const before = n === 10 ? 3 : n - 10;
    return { command: "str_replace", path, old_str: `steps done: ${before}`, new_str: `steps done: ${n}` };
  }
  return undefined;
}

/** What the fake saw of a run: requests answered, refused for size, the largest input. */
export function windowFacts(api: FakeMessagesApi): {
  answered: number;
  refusedForSize: number;
  largestInput: number;
  compactions: number;
} {
  const messages = api.requests.filter((r) => r.path.startsWith("/v1/messages"));
  return {
    answered: messages.filter((r) => r.status === 200).length,
    refusedForSize: messages.filter((r) => r.refusedForSize === true).length,
    largestInput: Math.max(0, ...messages.map((r) => r.inputTokens ?? 0)),
    compactions: messages.filter((r) => r.compacted).length,
  };
}
