/** Wiring for loop tests: a scripted model, a fake sandbox behind the real bash tool, and an event log. */
import type { AgentDeps, AgentLimits, AgentRunResult, StepCheckpoints } from "../../src/agent/agent-types.js";
import { type AgentEvents, combineEvents } from "../../src/agent/events.js";
import { runAgent } from "../../src/agent/loop.js";
import type { MessageParam } from "../../src/model/model-client.js";
import { createBashTool } from "../../src/tools/bash-tool.js";
import { createBlocklist } from "../../src/tools/blocklist.js";
import type { Tool } from "../../src/tools/tool.js";
import { FakeSandbox } from "./fake-sandbox.js";
import { type ModelStep, ScriptedModel } from "./scripted-model.js";

/** `[eventName, ...args]` for every event, in order. */
export type EventLog = Array<[string, ...unknown[]]>;

export function recordEvents(log: EventLog): AgentEvents {
  const record =
    (name: string) =>
    (...args: unknown[]) =>
      log.push([name, ...args]);
  return {
    onRunStart: record("onRunStart"),
    onUserMessage: record("onUserMessage"),
    onText: record("onText"),
    onAssistantTurn: record("onAssistantTurn"),
    onToolCall: record("onToolCall"),
    onToolResult: record("onToolResult"),
    onTurnUsage: record("onTurnUsage"),
    onNotice: record("onNotice"),
    onRunEnd: record("onRunEnd"),
  };
}

export interface FixtureOptions {
  sandbox?: FakeSandbox;
  tools?: Tool[];
  limits?: Partial<AgentLimits>;
  signal?: AbortSignal;
  events?: AgentEvents;
  checkpoints?: StepCheckpoints;
}

export function fixture(steps: ModelStep[], options: FixtureOptions = {}) {
  const sandbox = options.sandbox ?? new FakeSandbox();
  const model = new ScriptedModel(steps);
  const log: EventLog = [];
  const tools = options.tools ?? [
    createBashTool(sandbox, { timeoutMs: 60_000, blocklist: createBlocklist() }),
  ];
  const run = (task = "Fix the build.", history?: readonly MessageParam[]): Promise<AgentRunResult> => {
    const deps: AgentDeps = {
      model,
      tools,
      system: "You are a test agent.",
      limits: { maxTurns: 10, maxTokens: 1000, ...options.limits },
      events: combineEvents(recordEvents(log), options.events),
    };
    if (options.signal !== undefined) deps.signal = options.signal;
    if (options.checkpoints !== undefined) deps.checkpoints = options.checkpoints;
    if (history !== undefined) deps.history = history;
    return runAgent(task, deps);
  };
  /** Names of the events logged so far. */
  const eventNames = () => log.map(([name]) => name);
  /** Notices logged so far. */
  const notices = () => log.filter(([name]) => name === "onNotice").map(([, text]) => text as string);
  return { sandbox, model, log, run, eventNames, notices };
}

/** The content blocks of message `index` (string content as one text block). */
export function blocksOf(messages: readonly MessageParam[], index: number) {
  const message = messages.at(index);
  if (message === undefined) throw new Error(`no message at ${index}`);
  return typeof message.content === "string"
    ? [{ type: "text" as const, text: message.content }]
    : message.content;
}
