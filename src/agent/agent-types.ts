/** The loop's inputs and result. Re-exported by `loop.ts`. */
import type { HarnessError } from "../errors.js";
import type {
  EffortLevel,
  MessageParam,
  ModelClient,
  ThinkingSetting,
  TokenUsage,
} from "../model/model-client.js";
import type { Tool, ToolCall, ToolResult } from "../tools/tool.js";
import type { ContextOptions, ContextState } from "./context/context-manager.js";
import type { AgentEvents } from "./events.js";
import type { ExitStatus } from "./exit-status.js";

export interface AgentLimits {
  /** Most model calls in one run; reaching it ends the run with "step_limit". */
  maxTurns: number;
  /** Output budget for each response (`max_tokens`). */
  maxTokens: number;
  /** Budget over the run: input + output + cache read + cache write. Checked before each call, so the
   * last call can overshoot it. Reaching it ends the run with "cost_limit". */
  maxTotalTokens?: number;
  /** Estimated cost budget over the run, in USD, priced by `costOf`; checked like `maxTotalTokens`
   * (before each call, so the last call can overshoot it). Reaching it ends the run with "cost_limit". */
  maxCostUsd?: number;
  /** Prices a token count in USD; `maxCostUsd` is only checked when this is given. */
  costOf?: (usage: Readonly<TokenUsage>) => number;
}

export interface AgentDeps {
  /** The model to ask. */
  model: ModelClient;
  /** Tools the model may call. */
  tools: readonly Tool[];
  /** The system prompt. */
  system: string;
  /** Turn and token limits. */
  limits: AgentLimits;
  /** Aborting (Ctrl-C) kills the running command and ends the run with "canceled". */
  signal?: AbortSignal;
  /** Listeners for display and logging; they cannot crash the loop. */
  events?: AgentEvents;
  /** The conversation so far (a REPL passes the previous run's `messages`); not modified. */
  history?: readonly MessageParam[];
  /** Told after every tool call is answered (run or not): takes a checkpoint of the workspace. */
  checkpoints?: StepCheckpoints;
  /** Keeps the conversation within the model's context window (context/context-manager.ts); absent: nothing does. */
  context?: ContextOptions;
  /** `--thinking`; absent: the model's default. */
  thinking?: ThinkingSetting;
  /** `--effort`; absent: the model's default. */
  effort?: EffortLevel;
}

/**
 * What the loop calls when a step ends: one tool call answered. The CLI's implementation snapshots
 * the workspace (src/checkpoints/); the agent layer knows nothing of files. A snapshot may go on
 * while the model is asked for its next response (it costs nothing in wall time then): the loop
 * calls `settle` before the next call runs, before it records the next response, and before the run
 * ends, so nothing changes the workspace during a snapshot and the transcript keeps its order.
 * Contract: none of these rejects; a snapshot that fails is the implementation's note, never the
 * run's end.
 */
export interface StepCheckpoints {
  /** The run (each prompt of a session) begins, its run_start recorded: the workspace before its first call. */
  start(): Promise<void>;
  /** `call` was answered with `result`: the snapshot of what the step left starts (and may go on). */
  afterToolCall(call: ToolCall, result: ToolResult): void;
  /** Resolves once every snapshot started has been taken and recorded. */
  settle(): Promise<void>;
}

export interface AgentRunResult {
  /** How the run ended. */
  status: ExitStatus;
  /** The whole conversation, valid for the next request (pass it back as `history` to continue). */
  messages: MessageParam[];
  /** Model calls made in this run. */
  turns: number;
  /** Tokens summed over this run. */
  usage: TokenUsage;
  /** The text of the run's last model response ("" if none): the model's summary when submitted. */
  finalText: string;
  /** Why the run failed, when `status` is "error" (or "context_window" reported by an API error). */
  error?: HarnessError;
}

/** Mutable state of one run (internal to the loop). */
export interface RunState {
  /** The conversation, history included; always valid for the next request between steps. */
  messages: MessageParam[];
  /** Model calls made so far. */
  turns: number;
  /** Tokens summed so far. */
  usage: TokenUsage;
  /** `max_tokens` responses in a row; any other stop reason resets it. */
  maxTokensStreak: number;
  /** Text of the latest response. */
  finalText: string;
  /** The context manager's state; absent when the context is not managed. */
  context?: ContextState | undefined;
}

/** How a run ended (internal to the loop). */
export interface RunEnd {
  /** The run's status. */
  status: ExitStatus;
  /** The failure behind it, if any. */
  error?: HarnessError;
}

/** What the loop's helpers share (internal to the loop). */
export type RunContext = { deps: AgentDeps; events: Required<AgentEvents>; state: RunState };
