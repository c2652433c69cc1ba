/**
 * What the loop tells the outside world while it runs: the terminal renderer, the transcript and
 * the JSON outputs all listen here.
 */
import type { ModelResponse, TokenUsage } from "../model/model-client.js";
import type { EgressRecord } from "../sandbox/sandbox.js";
import type { ToolCall, ToolResult } from "../tools/tool.js";
import type { AgentLimits, AgentRunResult } from "./agent-types.js";
import type { ContextEdit } from "./context/context-edits.js";

/** What a run starts with. */
export interface RunStartInfo {
  /** The user's task for this run. */
  task: string;
  /** The system prompt sent with every request. */
  system: string;
  /** Names of the tools the model may call. */
  tools: string[];
  /** The run's limits. */
  limits: AgentLimits;
}

/**
 * Listeners for a run; every one is optional.
 * Contract: handlers should not throw; if they do (or return a rejected promise), the loop ignores it.
 */
export interface AgentEvents {
  /** Before the first request. */
  onRunStart?: (info: RunStartInfo) => void;
  /** A user text the loop sent: the task, or a nudge such as "continue in smaller steps". */
  onUserMessage?: (text: string) => void;
  /** A piece of assistant text as it streams in. */
  onText?: (delta: string) => void;
  /** A piece of the model's thinking as it streams in; `first` on a thinking block's first piece. */
  onThinking?: (delta: string, first: boolean) => void;
  /** A whole assistant response, once complete. */
  onAssistantTurn?: (response: ModelResponse) => void;
  /** A tool call is about to run (or be answered without running: cut off, cancelled). */
  onToolCall?: (call: ToolCall) => void;
  /** Output of a running command as it arrives, uncapped (for live display only). */
  onToolOutput?: (call: ToolCall, stream: "stdout" | "stderr", chunk: Buffer) => void;
  /** The result that will be sent back for `call`. */
  onToolResult?: (call: ToolCall, result: ToolResult) => void;
  /** Tokens of one response, and the run's total so far. */
  onTurnUsage?: (usage: TokenUsage, total: TokenUsage) => void;
  /** Something the user should know: a limit was reached, the model was told to continue, … */
  onNotice?: (text: string) => void;
  /** The conversation was edited to fit the context window: compacted, results cleared, summarized. */
  onContextEdit?: (edit: ContextEdit) => void;
  /** The run is over; called exactly once. */
  onRunEnd?: (result: AgentRunResult) => void;
  /**
   * Allowlist mode: one connection through the gateway ended (or was refused). Not called by the
   * loop: the CLI forwards the sandbox's `EgressMonitor` here, so records also come between runs.
   */
  onEgress?: (record: EgressRecord) => void;
}

const EVENT_NAMES = [
  "onRunStart",
  "onUserMessage",
  "onText",
  "onThinking",
  "onAssistantTurn",
  "onToolCall",
  "onToolOutput",
  "onToolResult",
  "onTurnUsage",
  "onNotice",
  "onContextEdit",
  "onRunEnd",
  "onEgress",
] as const satisfies readonly (keyof AgentEvents)[];

type AnyHandler = (...args: unknown[]) => unknown;

/**
 * One `AgentEvents` that calls each listener's handler in order. Each call is guarded: a throwing
 * (or rejecting) listener neither stops the others nor reaches the caller.
 */
export function combineEvents(...listeners: Array<AgentEvents | undefined>): Required<AgentEvents> {
  const combined: Record<string, AnyHandler> = {};
  for (const name of EVENT_NAMES) {
    combined[name] = (...args: unknown[]) => {
      for (const listener of listeners) {
        const handler = listener?.[name] as AnyHandler | undefined;
        if (handler !== undefined) callSafely(handler, listener, args);
      }
    };
  }
  return combined as unknown as Required<AgentEvents>;
}

/** `events` with every handler present and guarded, so the loop can call them without care. */
export function guardEvents(events: AgentEvents | undefined): Required<AgentEvents> {
  return combineEvents(events);
}

function callSafely(handler: AnyHandler, self: unknown, args: unknown[]): void {
  try {
    const returned = handler.apply(self, args);
    if (returned instanceof Promise) returned.catch(ignore);
  } catch {
    // A display or logging listener failing must not end the run.
  }
}

function ignore(): void {
  // Rejections from async listeners are dropped for the same reason as synchronous throws.
}
