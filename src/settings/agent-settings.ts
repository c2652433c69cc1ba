/** The model and the agent's limits: which model, how far a run may go, what stdout carries. */

import { ConfigError } from "../errors.js";
import { EFFORT_LEVELS, type ThinkingSetting } from "../model/model-client.js";
import { oneOf, positiveNumber } from "./parsers.js";
import type { Setting } from "./setting.js";

/** What `harness run` prints on stdout (docs/output-formats.md). */
export const OUTPUT_FORMATS = ["text", "json", "stream-json"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

const whole = (text: string, name: string) => positiveNumber(name, text);

/** How a run longer than the context window goes on (agent/context/context-manager.ts). */
export const CONTEXT_MODES = ["auto", "server", "client", "off"] as const;
export type ContextMode = (typeof CONTEXT_MODES)[number];

/** Which tools the model gets: Anthropic's own, harness's custom ones, or decided by the endpoint. */
export const TOOL_SETS = ["auto", "anthropic", "custom"] as const;
export type ToolSet = (typeof TOOL_SETS)[number];

/** `--thinking adaptive|off|TOKENS`. */
function parseThinking(text: string, name: string): ThinkingSetting {
  const value = text.trim();
  if (value === "adaptive") return { type: "adaptive" };
  if (value === "off") return { type: "disabled" };
  const budget = Number(value);
  if (!/^\d+$/.test(value) || budget < 1024)
    throw new ConfigError(`${name} must be adaptive, off or a token budget of 1024 or more, got '${value}'`);
  return { type: "enabled", budgetTokens: budget };
}

export const AGENT_SETTINGS = {
  /** Never from the command line (it would show in `ps`); stays on the host, never enters the sandbox. */
  apiKey: {
    env: "ANTHROPIC_API_KEY",
    help: "your Anthropic API key. It stays on the host and never enters the sandbox.",
    required: true,
  },
  model: {
    flag: "--model <id>",
    env: "MODEL_ID",
    help: "model id, e.g. claude-sonnet-4-6",
    perTask: true,
    freeInDotenv: true,
    required: true,
  },
  baseURL: {
    env: "ANTHROPIC_BASE_URL",
    help: "a compatible Messages API endpoint",
    defaultText: "Anthropic's own",
  },
  maxTurns: {
    flag: "--max-turns <n>",
    env: "HARNESS_MAX_TURNS",
    help: "stop after this many model calls",
    default: 50,
    parse: whole,
    perTask: true,
  },
  maxTokens: {
    flag: "--max-tokens <n>",
    env: "HARNESS_MAX_TOKENS",
    help: "output budget of one model response",
    default: 8000,
    parse: whole,
    perTask: true,
  },
  maxTotalTokens: {
    flag: "--max-total-tokens <n>",
    env: "HARNESS_MAX_TOTAL_TOKENS",
    help: "token budget over the whole run",
    parse: whole,
    perTask: true,
  },
  contextWindow: {
    flag: "--context-window <tokens>",
    env: "HARNESS_CONTEXT_WINDOW",
    help: "the model's context window in tokens, for an endpoint whose Models API does not say",
    defaultText: "the Models API's, else harness's table",
    parse: whole,
    perTask: true,
  },
  contextManagement: {
    flag: "--context-management <mode>",
    env: "HARNESS_CONTEXT_MANAGEMENT",
    help: "how a run longer than the context window goes on: server (the API compacts), client (harness clears old tool results, then summarizes), off, or auto (server where the model supports it)",
    default: "auto" as ContextMode,
    parse: oneOf(CONTEXT_MODES),
    perTask: true,
  },
  thinking: {
    flag: "--thinking <mode>",
    env: "HARNESS_THINKING",
    help: "adaptive, off, or a thinking budget in tokens (1024 or more, below --max-tokens)",
    defaultText: "the model's default",
    parse: parseThinking,
    perTask: true,
  },
  effort: {
    flag: "--effort <level>",
    env: "HARNESS_EFFORT",
    help: "how much effort the model puts into a response: low, medium, high or max",
    defaultText: "the model's default",
    parse: oneOf(EFFORT_LEVELS),
    perTask: true,
  },
  tools: {
    flag: "--tools <set>",
    env: "HARNESS_TOOLS",
    help: "the model's tools: anthropic (bash_20250124 and the text editor, the schemas Claude was trained on), custom (harness's own bash), or auto (anthropic where the endpoint answers the Models API)",
    default: "auto" as ToolSet,
    parse: oneOf(TOOL_SETS),
    perTask: true,
  },
  maxBudgetUsd: {
    flag: "--max-budget-usd <usd>",
    env: "HARNESS_MAX_BUDGET_USD",
    help: "stop the run when its estimated cost reaches this many US dollars",
    parse: (text: string, name: string) => positiveNumber(name, text, false),
    perTask: true,
  },
  outputFormat: {
    flag: "--output-format <format>",
    env: "HARNESS_OUTPUT_FORMAT",
    help: "what stdout carries: text, json or stream-json",
    default: "text" as OutputFormat,
    parse: oneOf(OUTPUT_FORMATS),
  },
  blocklist: {
    flag: "--no-blocklist",
    help: "turn off the command blocklist (the container stays the boundary)",
  },
  block: {
    flag: "--block <regex...>",
    help: "extra blocklist patterns",
  },
  transcript: {
    flag: "--transcript <path>",
    help: "write the JSONL transcript here",
    defaultText: "~/.local/state/harness/runs/",
  },
} as const satisfies Record<string, Setting>;
