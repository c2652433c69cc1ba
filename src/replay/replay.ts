/**
 * Replays a transcript's recorded bash and editor calls, in order, against a sandbox, with no model,
 * and compares each with its recording. The calls go through the same tools `harness run` uses, so a
 * call's own `timeout` is parsed and capped exactly as it was when recorded, and an editor call makes
 * the same edit (its answer compared whole).
 */
import type { Sandbox } from "../sandbox/sandbox.js";
import { createBashTool } from "../tools/bash-tool.js";
import { createEditorTool } from "../tools/editor/editor-tool.js";
import { type Tool, type ToolContext, ToolError } from "../tools/tool.js";
import { scrubSecrets } from "../transcript/transcript.js";
import { type CompareOptions, type Comparison, compareOutputs } from "./compare.js";
import { EDITOR_TOOL, type RanCall, type RecordedCall, type RecordedOutput } from "./read-transcript.js";

/** How to replay. */
export interface ReplayOptions extends CompareOptions {
  /** Timeout of calls whose input gives none (the recording's default is not in the transcript). */
  timeoutMs: number;
  /** Aborting (Ctrl-C) kills the running command and stops the replay. */
  signal?: AbortSignal;
  /** Called as each call is done (replayed or skipped), for live progress. */
  onCall?: (call: CallReplay) => void;
}

/** "match": same outcome; "mismatch": it differs; "skipped": not replayed (did not run when recorded). */
export type CallStatus = "match" | "mismatch" | "skipped";

/** One call's replay. */
export interface CallReplay {
  /** 1-based position among the transcript's tool calls. */
  n: number;
  /** The `tool_use` id. */
  id: string;
  /** The command line ("" when the call had none). */
  command: string;
  status: CallStatus;
  /** Why it was skipped. */
  reason?: string;
  /** What the recording got (replayed calls only). */
  recorded?: RecordedOutput;
  /** What the replay got, scrubbed of secrets as the recording was. */
  replayed?: RecordedOutput;
  /** The comparison, with excerpts of differing output. */
  comparison?: Comparison;
  /** Why the call could not be run at all (the current bash tool refuses its recorded input). */
  error?: string;
}

/** Counts over the whole replay. */
export interface ReplaySummary {
  /** Tool calls in the transcript. */
  total: number;
  /** Calls replayed with the recorded outcome. */
  matched: number;
  /** Calls replayed with a different outcome. */
  diverged: number;
  /** Calls not replayed. */
  skipped: number;
}

/** The result of a replay. */
export interface ReplayReport {
  /** Every call reached, in order (fewer than the transcript's when interrupted). */
  calls: CallReplay[];
  summary: ReplaySummary;
  /** True when no replayed call diverged and the replay was not interrupted. */
  reproduced: boolean;
  /** True when the signal stopped the replay before the end. */
  interrupted: boolean;
}

export async function replayCalls(
  calls: readonly RecordedCall[],
  sandbox: Sandbox,
  options: ReplayOptions,
): Promise<ReplayReport> {
  // No blocklist: every replayed call already passed the recording's.
  const bash = createBashTool(sandbox, { timeoutMs: options.timeoutMs });
  const editor = createEditorTool(sandbox, { timeoutMs: options.timeoutMs });
  const done: CallReplay[] = [];
  let interrupted = false;
  for (const call of calls) {
    if (options.signal?.aborted) {
      interrupted = true;
      break;
    }
    let replay: CallReplay;
    if (call.kind === "skipped") {
      replay = { n: call.n, id: call.id, command: call.command, status: "skipped", reason: call.reason };
    } else {
      const outcome =
        call.name === EDITOR_TOOL
          ? await runEditorCall(editor, call, options)
          : await runCall(bash, call, options);
      if (outcome === "canceled") {
        interrupted = true;
        break;
      }
      replay = outcome;
    }
    done.push(replay);
    options.onCall?.(replay);
  }
  const count = (status: CallStatus) => done.filter((call) => call.status === status).length;
  const summary: ReplaySummary = {
    total: calls.length,
    matched: count("match"),
    diverged: count("mismatch"),
    skipped: count("skipped"),
  };
  return { calls: done, summary, reproduced: !interrupted && summary.diverged === 0, interrupted };
}

/** An editor call: the same edit, its answer compared with the recorded one. */
async function runEditorCall(
  tool: ReturnType<typeof createEditorTool>,
  call: RanCall,
  options: ReplayOptions,
): Promise<CallReplay | "canceled"> {
  const base = { n: call.n, id: call.id, command: call.command, recorded: call.recorded };
  const context: ToolContext = { callId: call.id };
  if (options.signal !== undefined) context.signal = options.signal;
  const answer = await answerOf(tool, call.input, context);
  if (options.signal?.aborted) return "canceled";
  const replayed: RecordedOutput = {
    exitCode: answer.isError ? 1 : 0,
    stdout: scrubSecrets(answer.content) as string,
    stderr: "",
    timedOut: false,
  };
  const comparison = compareOutputs(call.recorded, replayed, options);
  return { ...base, status: comparison.matches ? "match" : "mismatch", replayed, comparison };
}

/** What a tool answers an input with, its refusals included (as the loop's tool turn gives them). */
async function answerOf<I>(
  tool: Tool<I>,
  input: unknown,
  context: ToolContext,
): Promise<{ content: string; isError: boolean }> {
  try {
    return await tool.run(tool.parse(input), context);
  } catch (error) {
    if (error instanceof ToolError) return { content: error.message, isError: true };
    throw error;
  }
}

async function runCall(
  tool: ReturnType<typeof createBashTool>,
  call: RanCall,
  options: ReplayOptions,
): Promise<CallReplay | "canceled"> {
  const base = { n: call.n, id: call.id, command: call.command, recorded: call.recorded };
  let input: ReturnType<typeof tool.parse>;
  try {
    input = tool.parse(call.input);
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
    return { ...base, status: "mismatch", error: error.message };
  }
  const context: ToolContext = { callId: call.id };
  if (options.signal !== undefined) context.signal = options.signal;
  const output = await tool.run(input, context);
  const exec = output.exec;
  if (exec === undefined) return { ...base, status: "mismatch", error: output.content };
  if (exec.isCanceled) return "canceled";
  // The recording scrubbed key-like strings from what it wrote; the replay must see the same text.
  const replayed: RecordedOutput = {
    exitCode: exec.exitCode ?? null,
    stdout: scrubSecrets(exec.stdout) as string,
    stderr: scrubSecrets(exec.stderr) as string,
    timedOut: exec.timedOut,
  };
  const comparison = compareOutputs(call.recorded, replayed, options);
  return { ...base, status: comparison.matches ? "match" : "mismatch", replayed, comparison };
}
