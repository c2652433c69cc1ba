/**
 * Settings from flags and environment (after `.env` is loaded), validated once and frozen.
 * Explicit flags win over env; env is read when `loadConfig` is called, not at import, so a `.env`
 * loaded later still applies (anthropic-sdk `src/client.ts`, testcontainers `getReaperImage`).
 */
import { ConfigError } from "./errors.js";

/** Flags as commander parses them; every one optional. */
export interface CliFlags {
  workspace?: string;
  model?: string;
  timeout?: string;
  maxTurns?: string;
  maxTokens?: string;
  maxTotalTokens?: string;
  image?: string;
  network?: string;
  user?: string;
  runtime?: string;
  memory?: string;
  cpus?: string;
  pids?: string;
  blocklist?: boolean;
  block?: string[];
  transcript?: string;
}

export interface SandboxConfig {
  /** Host path of the workspace as given (resolved later by the sandbox). */
  workspace: string;
  image: string | undefined;
  network: string;
  user: string | undefined;
  runtime: string | undefined;
  memoryBytes: number | undefined;
  cpus: number | undefined;
  pidsLimit: number | undefined;
  /** Per-command timeout. */
  timeoutMs: number;
}

export interface AgentConfig {
  apiKey: string;
  model: string;
  baseURL: string | undefined;
  maxTurns: number;
  /** Output budget of one response. */
  maxTokens: number;
  /** Token budget over the whole run (input + cache + output); undefined for none. */
  maxTotalTokens: number | undefined;
  blocklist: { disabled: boolean; extraPatterns: string[] };
}

export const DEFAULTS = {
  timeoutSeconds: 120,
  maxTurns: 50,
  maxTokens: 8000,
  network: "none",
} as const;

function positiveNumber(name: string, value: string | undefined, integer = true): number | undefined {
  if (value === undefined || value === "") return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new ConfigError(`${name} must be a positive ${integer ? "whole " : ""}number, got '${value}'`);
  }
  return n;
}

/** "2g", "512m", "1024k" or plain bytes. */
export function parseMemory(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const match = /^(\d+(?:\.\d+)?)([kmg]?)b?$/i.exec(value.trim());
  if (!match) throw new ConfigError(`--memory must look like 512m or 2g, got '${value}'`);
  const scale = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 }[(match[2] ?? "").toLowerCase()] ?? 1;
  return Math.round(Number(match[1]) * scale);
}

export function loadSandboxConfig(env: NodeJS.ProcessEnv, flags: CliFlags): Readonly<SandboxConfig> {
  const user = flags.user;
  if (user !== undefined && !/^\d+(:\d+)?$/.test(user))
    throw new ConfigError(`--user must be UID or UID:GID, got '${user}'`);
  return Object.freeze({
    workspace: flags.workspace ?? env["HARNESS_WORKSPACE"] ?? process.cwd(),
    image: flags.image ?? env["HARNESS_IMAGE"] ?? undefined,
    network: flags.network ?? env["HARNESS_NETWORK"] ?? DEFAULTS.network,
    user: user?.includes(":") ? user : user ? `${user}:${user}` : undefined,
    runtime: flags.runtime ?? env["HARNESS_RUNTIME"] ?? undefined,
    memoryBytes: parseMemory(flags.memory ?? env["HARNESS_MEMORY"]),
    cpus: positiveNumber("--cpus", flags.cpus ?? env["HARNESS_CPUS"], false),
    pidsLimit: positiveNumber("--pids", flags.pids ?? env["HARNESS_PIDS"]),
    timeoutMs:
      1000 *
      (positiveNumber("--timeout", flags.timeout ?? env["HARNESS_TIMEOUT"], false) ??
        DEFAULTS.timeoutSeconds),
  });
}

export function loadAgentConfig(env: NodeJS.ProcessEnv, flags: CliFlags): Readonly<AgentConfig> {
  const apiKey = env["ANTHROPIC_API_KEY"]?.trim();
  if (!apiKey) {
    throw new ConfigError(
      "ANTHROPIC_API_KEY is not set: put ANTHROPIC_API_KEY=... in a .env file in the current directory (see .env.example) or export it",
    );
  }
  const model = (flags.model ?? env["MODEL_ID"])?.trim();
  if (!model) {
    throw new ConfigError("no model given: put MODEL_ID=... in .env (see .env.example) or pass --model");
  }
  const baseURL = env["ANTHROPIC_BASE_URL"]?.trim() || undefined;
  if (baseURL !== undefined && !/^https?:\/\//.test(baseURL)) {
    throw new ConfigError(`ANTHROPIC_BASE_URL must be an http(s) URL, got '${baseURL}'`);
  }
  return Object.freeze({
    apiKey,
    model,
    baseURL,
    maxTurns: positiveNumber("--max-turns", flags.maxTurns ?? env["HARNESS_MAX_TURNS"]) ?? DEFAULTS.maxTurns,
    maxTokens:
      positiveNumber("--max-tokens", flags.maxTokens ?? env["HARNESS_MAX_TOKENS"]) ?? DEFAULTS.maxTokens,
    maxTotalTokens: positiveNumber(
      "--max-total-tokens",
      flags.maxTotalTokens ?? env["HARNESS_MAX_TOTAL_TOKENS"],
    ),
    blocklist: Object.freeze({
      disabled: flags.blocklist === false,
      extraPatterns: [...(flags.block ?? [])],
    }),
  });
}
