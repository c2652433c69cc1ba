/** The model and the agent's limits: which model, how far a run may go, what stdout carries. */
import { oneOf, positiveNumber } from "./parsers.js";
import type { Setting } from "./setting.js";

/** What `harness run` prints on stdout (docs/output-formats.md). */
export const OUTPUT_FORMATS = ["text", "json", "stream-json"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

const whole = (text: string, name: string) => positiveNumber(name, text);

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
