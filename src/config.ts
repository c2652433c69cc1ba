/**
 * Settings from flags and environment (after `.env` is loaded), validated once and frozen.
 * Explicit flags win over env; env is read when `loadConfig` is called, not at import, so a `.env`
 * loaded later still applies.
 */
import { type AllowPreset, allowPresetHosts, PRESET_NAMES, parseAllowPreset } from "./allow-presets.js";
import { ConfigError } from "./errors.js";
import { type ModelPricing, PRICE_ENV_VARS, resolvePricing } from "./model/pricing.js";
import { parsePublishFlags } from "./publish-flag.js";
import { parseAllowEntry } from "./sandbox/egress/policy/allowlist.js";
import { parseRequestRule } from "./sandbox/egress/request-rules.js";
import {
  checkSecretValue,
  parseSecretSpec,
  type SecretGrant,
  SecretValue,
} from "./sandbox/egress/secrets/secret-grant.js";
import { normalizeProtectPath } from "./sandbox/host/git/protected-paths.js";
import {
  type EgressRequest,
  type IsolationKind,
  SANDBOX_DEFAULTS,
  type SandboxRequest,
} from "./sandbox/sandbox-request.js";
import { parseSandboxUser } from "./sandbox/sandbox-user.js";

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
  tmpSize?: string;
  homeSize?: string;
  cpus?: string;
  pids?: string;
  blocklist?: boolean;
  block?: string[];
  /** `--protect PATH` (repeatable) gives the paths; `--no-protect` gives false. */
  protect?: string[] | false;
  /** `--isolation bind|copy`. */
  isolation?: string;
  /** `--context NAME`: the Docker context (engine) to use. */
  context?: string;
  /** `--engine docker|kubernetes` (HARNESS_ENGINE): where sandboxes run. */
  engine?: string;
  /** `--kube-context NAME`: a context of the kubeconfig (KUBECONFIG, ~/.kube/config) instead of its current one. */
  kubeContext?: string;
  /** `--namespace NAME` (HARNESS_NAMESPACE): where the Kubernetes engine makes its pods (default harness). */
  namespace?: string;
  /** `--kube-seccomp-profile PATH`: a Localhost seccomp profile on the nodes. Flag only: a `.env` must not pick it. */
  kubeSeccompProfile?: string;
  /** `--copy-limit SIZE`, e.g. 2g. */
  copyLimit?: string;
  /** `--copy-max-files N`: most files, directories and symlinks copied in and out. */
  copyMaxFiles?: string;
  /** `--publish PORT[:HOSTPORT]` (repeatable): sandbox ports reachable on the host's 127.0.0.1. */
  publish?: string[];
  /** `--allow-host PATTERN` (repeatable): allowlist mode's entries. */
  allowHost?: string[];
  /** `--allow PRESET` (repeatable): npm, pypi (pip), git=HOST. */
  allow?: string[];
  /** `--secret NAME@HOST` (repeatable): NAME's value goes to HOST only, through the gateway. */
  secret?: string[];
  /** `--allow-request METHODS@HOST/PATH` (repeatable): narrows an allowed host. Flag only. */
  allowRequest?: string[];
  /** A batch task's `secrets`: only these of the `--secret` grants (names). Not a command-line flag. */
  secretNames?: string[];
  /** `--secret-in-body NAME` (repeatable): also swap NAME's placeholder in request bodies. */
  secretInBody?: string[];
  /** `--allow-private`: allowed names may resolve to private and loopback addresses. */
  allowPrivate?: boolean;
  /** `--egress-limit SIZE`: most bytes through the gateway per run. */
  egressLimit?: string;
  /**
   * `--egress-wildcard-names N`: most distinct names looked up under each wildcard entry. Flag only,
   * like `--allow-private`: a `.env` the sandbox can write must not widen a channel out of it.
   */
  egressWildcardNames?: string;
  /** `--apply` gives true, `--no-apply` false, neither undefined (copy mode: ask on a terminal). */
  apply?: boolean;
  transcript?: string;
  outputFormat?: string;
  maxBudgetUsd?: string;
}

/** What `harness run` prints on stdout (docs/output-formats.md). */
export const OUTPUT_FORMATS = ["text", "json", "stream-json"] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** Where sandboxes run: Docker (or Podman) containers, or pods on a Kubernetes cluster. */
export const ENGINES = ["docker", "kubernetes"] as const;
export type SandboxEngine = (typeof ENGINES)[number];

/** The sandbox request (sandbox-request.ts) as flags and env give it, with what the CLI always decides. */
export interface SandboxConfig extends SandboxRequest {
  /** `--engine`/HARNESS_ENGINE; default docker. */
  engine: SandboxEngine;
  /** Kubernetes only: `--kube-context`, `--namespace`/HARNESS_NAMESPACE, `--kube-seccomp-profile`. */
  kubeContext?: string | undefined;
  namespace?: string | undefined;
  seccompProfile?: string | undefined;
  network: string;
  /**
   * Read-only mounts of files the host runs later (git hooks and config, `.envrc`, `.vscode`…).
   * Flags only, no env var: a `.env` in the workspace must not be able to turn them off.
   */
  protect: { disabled: boolean; extraPaths: string[] };
  /**
   * "bind" mounts the workspace; "copy" copies it into a throwaway container and writes changes
   * back only when asked. Flags only, like `protect`: a `.env` must not be able to switch copy off.
   */
  isolation: IsolationKind;
  /** Per-command timeout. */
  timeoutMs: number;
  /** Allowlist mode, every field decided (presets resolved); undefined without an allow entry. */
  egress?: EgressConfig | undefined;
}

/** Allowlist mode as the CLI decided it. */
export interface EgressConfig extends EgressRequest {
  /** Entries from `--allow-host` and the resolved `--allow` presets, each checked, without repeats. */
  allowHosts: string[];
  /**
   * `--allow-private`. Flag only, like `protect`: a `.env` in a bind-mounted workspace is writable
   * by the sandbox, and this opens the host's own loopback services to it.
   */
  allowPrivate: boolean;
  limitBytes: number;
  /** True when the entries came from `SandboxConfigOptions.inheritEgress`, not from flags or env. */
  inherited?: boolean;
}

/** What else `loadSandboxConfig` may be given. */
export interface SandboxConfigOptions {
  /**
   * Allowlist mode to use when neither flags nor env name an allow entry and the network is "none"
   * (replay: the recording's). `allowPrivate` is never taken from here: only the flag gives it.
   */
  inheritEgress?: Pick<EgressRequest, "allowHosts" | "limitBytes" | "requestRules"> | undefined;
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
  /** What `run` prints on stdout: people's text, one JSON result, or a JSON line per event. */
  outputFormat: OutputFormat;
  /** Estimated cost budget over the run, in USD; undefined for none. Set only when `pricing` is known. */
  maxBudgetUsd: number | undefined;
  /** Prices for `model` (table or HARNESS_PRICE_*); undefined when unknown, so cost is reported as null. */
  pricing: ModelPricing | undefined;
}

/** The agent's defaults; the sandbox's are SANDBOX_DEFAULTS. */
export const DEFAULTS = {
  maxTurns: 50,
  maxTokens: 8000,
} as const;

function positiveNumber(name: string, value: string | undefined, integer = true): number | undefined {
  if (value === undefined || value === "") return undefined;
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isInteger(n))) {
    throw new ConfigError(`${name} must be a positive ${integer ? "whole " : ""}number, got '${value}'`);
  }
  return n;
}

/** "2g", "512m", "1024k" or plain bytes, for --memory. */
export function parseMemory(value: string | undefined): number | undefined {
  return parseByteSize("--memory", value);
}

/** "2g", "500m", "1GiB", "4096" (bytes); for a size flag named `flag`. */
export function parseByteSize(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const match = /^(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?$/i.exec(value.trim());
  const scale = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[
    (match?.[2] ?? "").toLowerCase()
  ];
  const bytes = Math.round(Number(match?.[1]) * (scale ?? 1));
  if (!match || !(bytes > 0)) throw new ConfigError(`${flag} must look like 500m or 2g, got '${value}'`);
  return bytes;
}

/** Per-command timeout in ms; Node's timers hold at most 2^31-1 ms (about 24 days). */
function timeoutMs(value: string | undefined): number {
  const seconds = positiveNumber("--timeout", value, false) ?? SANDBOX_DEFAULTS.timeoutMs / 1000;
  if (seconds * 1000 > 2 ** 31 - 1)
    throw new ConfigError(`--timeout must be at most 2147483 seconds, got '${value}'`);
  return Math.round(seconds * 1000);
}

function mebibytes(bytes: number | undefined): number | undefined {
  return bytes === undefined ? undefined : Math.max(1, Math.ceil(bytes / 1024 ** 2));
}

export function loadSandboxConfig(
  env: NodeJS.ProcessEnv,
  flags: CliFlags,
  options: SandboxConfigOptions = {},
): Readonly<SandboxConfig> {
  const user = flags.user === undefined ? undefined : parseSandboxUser(flags.user);
  if (user?.ok === false) throw new ConfigError(`--user ${user.reason}`);
  const engine = flags.engine ?? (env["HARNESS_ENGINE"] || undefined) ?? "docker";
  if (!(ENGINES as readonly string[]).includes(engine))
    throw new ConfigError(`--engine must be ${ENGINES.join(" or ")}, got '${engine}'`);
  // A cluster cannot mount this machine's directory: Kubernetes copies unless told otherwise (and refuses bind).
  const isolation = flags.isolation ?? (engine === "kubernetes" ? "copy" : "bind");
  if (isolation !== "bind" && isolation !== "copy")
    throw new ConfigError(`--isolation must be bind or copy, got '${isolation}'`);
  const network = flags.network ?? env["HARNESS_NETWORK"] ?? SANDBOX_DEFAULTS.network;
  return Object.freeze({
    engine: engine as SandboxEngine,
    ...(engine === "kubernetes"
      ? {
          kubeContext: flags.kubeContext,
          namespace: flags.namespace ?? (env["HARNESS_NAMESPACE"] || undefined),
          seccompProfile: flags.kubeSeccompProfile,
        }
      : {}),
    workspace: flags.workspace ?? env["HARNESS_WORKSPACE"] ?? process.cwd(),
    image: flags.image ?? env["HARNESS_IMAGE"] ?? undefined,
    network,
    user: user?.user,
    runtime: flags.runtime ?? env["HARNESS_RUNTIME"] ?? undefined,
    memoryBytes: parseMemory(flags.memory ?? env["HARNESS_MEMORY"]),
    tmpSizeMiB: mebibytes(parseByteSize("--tmp-size", flags.tmpSize ?? env["HARNESS_TMP_SIZE"])),
    homeSizeMiB: mebibytes(parseByteSize("--home-size", flags.homeSize ?? env["HARNESS_HOME_SIZE"])),
    cpus: positiveNumber("--cpus", flags.cpus ?? env["HARNESS_CPUS"], false),
    pidsLimit: positiveNumber("--pids", flags.pids ?? env["HARNESS_PIDS"]),
    protect: Object.freeze({
      disabled: flags.protect === false,
      extraPaths: (flags.protect || []).map(normalizeProtectPath),
    }),
    isolation,
    isolationExplicit: flags.isolation !== undefined,
    dockerContext: flags.context,
    copyLimitBytes: parseByteSize("--copy-limit", flags.copyLimit),
    copyMaxFiles: positiveNumber("--copy-max-files", flags.copyMaxFiles),
    timeoutMs: timeoutMs(flags.timeout ?? env["HARNESS_TIMEOUT"]),
    egress: loadEgressConfig(env, flags, network, options.inheritEgress),
    ...(flags.publish === undefined ? {} : { publish: parsePublishFlags(flags.publish) }),
  });
}

/** A comma-separated env list: trimmed, empty items dropped. */
function envList(value: string | undefined): string[] {
  return (value ?? "")
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

/**
 * Allowlist mode from `--allow-host`/HARNESS_ALLOW_HOSTS, `--allow`/HARNESS_ALLOW (presets read the
 * host's npm and pip configuration, so they run only once everything else is known to be valid),
 * `--allow-private` and `--egress-limit`/HARNESS_EGRESS_LIMIT. Undefined when nothing is allowed.
 */
function loadEgressConfig(
  env: NodeJS.ProcessEnv,
  flags: CliFlags,
  network: string,
  inherited: SandboxConfigOptions["inheritEgress"],
): EgressConfig | undefined {
  const fromEnv = flags.allowHost === undefined;
  const hosts = flags.allowHost ?? envList(env["HARNESS_ALLOW_HOSTS"]);
  const presets = (flags.allow ?? envList(env["HARNESS_ALLOW"])).map((text): AllowPreset => {
    const preset = parseAllowPreset(text);
    if (preset === undefined) throw new ConfigError(`--allow must be ${PRESET_NAMES}, got '${text}'`);
    return preset;
  });
  // Empty is unset: compose passes HARNESS_EGRESS_LIMIT through as "" when it is not given.
  const limitBytes = parseByteSize(
    "--egress-limit",
    flags.egressLimit ?? (env["HARNESS_EGRESS_LIMIT"] || undefined),
  );
  const allowPrivate = flags.allowPrivate === true;
  const wildcardNames = positiveNumber("--egress-wildcard-names", flags.egressWildcardNames);
  const secrets = loadSecrets(env, flags);
  const requestRules = (flags.allowRequest ?? []).map((text) => {
    const parsed = parseRequestRule(text);
    if (!parsed.ok) throw new ConfigError(`--allow-request ${parsed.reason}`);
    return parsed.rule.text;
  });
  // What narrows or names credentials rides along on either way of getting the hosts. A replay keeps
  // the recorded rules unless new ones are given; secrets are never inherited (no value is recorded).
  const extras = (rules: readonly string[]) => ({
    ...(secrets.length === 0 ? {} : { secrets }),
    ...(rules.length === 0 ? {} : { requestRules: [...rules] }),
  });
  const inheritedUsable =
    inherited !== undefined &&
    network === SANDBOX_DEFAULTS.network &&
    (inherited.allowHosts.length > 0 || secrets.length > 0);
  if (hosts.length === 0 && presets.length === 0 && (secrets.length === 0 || inheritedUsable)) {
    if (inherited !== undefined && inheritedUsable) {
      const entries = inherited.allowHosts.map((text) => checkedEntry(text, "the recorded allow entry"));
      const limit = limitBytes ?? inherited.limitBytes;
      const config = egressConfig([...new Set(entries)], allowPrivate, limit, wildcardNames, true);
      const rules = flags.allowRequest === undefined ? (inherited.requestRules ?? []) : requestRules;
      return Object.freeze({ ...config, ...extras(rules) });
    }
    // HARNESS_EGRESS_LIMIT in a shared .env is harmless without hosts; the flags alone are a mistake.
    if (allowPrivate || flags.egressLimit !== undefined)
      throw new ConfigError("--allow-private and --egress-limit need an --allow-host or --allow entry");
    if (wildcardNames !== undefined)
      throw new ConfigError("--egress-wildcard-names needs an --allow-host or --allow entry");
    if (flags.allowRequest !== undefined)
      throw new ConfigError("--allow-request needs an --allow-host or --secret entry for its host");
    return undefined;
  }
  if (network !== SANDBOX_DEFAULTS.network) {
    throw new ConfigError(
      `--allow-host and --allow need --network none (the default): the gateway must be the sandbox's only way out, got --network ${network}`,
    );
  }
  const entries = hosts.map((text) => checkedEntry(text, fromEnv ? "HARNESS_ALLOW_HOSTS" : "--allow-host"));
  for (const preset of presets) {
    const flag = preset.kind === "git" ? `--allow git=${preset.host}` : `--allow ${preset.kind}`;
    for (const text of allowPresetHosts(preset, env)) entries.push(checkedEntry(text, flag));
  }
  const config = egressConfig([...new Set(entries)], allowPrivate, limitBytes, wildcardNames);
  return Object.freeze({ ...config, ...extras(requestRules) });
}

/**
 * `--secret NAME@HOST` (or HARNESS_SECRETS, entries separated by spaces), each value read from
 * `env[NAME]` now. A `.env` the sandbox may have written never sets NAME (dotenv-keys.ts guards
 * every key it does not know) nor HARNESS_SECRETS (a widening key).
 */
function loadSecrets(env: NodeJS.ProcessEnv, flags: CliFlags): SecretGrant[] {
  const fromEnv = flags.secret === undefined;
  const texts = flags.secret ?? (env["HARNESS_SECRETS"] ?? "").split(/\s+/).filter((t) => t !== "");
  const flag = fromEnv ? "HARNESS_SECRETS" : "--secret";
  const inBody = new Set(flags.secretInBody ?? []);
  const grants: SecretGrant[] = [];
  for (const text of texts) {
    const parsed = parseSecretSpec(text);
    if (!parsed.ok) throw new ConfigError(`${flag} '${text}': ${parsed.reason}`);
    const { name, host } = parsed.spec;
    if (grants.some((g) => g.name === name)) throw new ConfigError(`${flag}: ${name} is given twice`);
    const value = env[name];
    if (value === undefined || value === "") {
      throw new ConfigError(
        `${flag} ${name}@${host}: ${name} is not set in harness's environment (export it, or put it in a .env that no sandbox can write)`,
      );
    }
    checkSecretValue(name, value);
    grants.push({ name, host, inBody: inBody.has(name), value: new SecretValue(name, value) });
  }
  for (const name of inBody) {
    if (!grants.some((g) => g.name === name)) {
      throw new ConfigError(`--secret-in-body ${name}: no --secret ${name}@HOST to go with it`);
    }
  }
  const chosen = flags.secretNames;
  if (chosen === undefined) return grants;
  for (const name of chosen) {
    if (!grants.some((g) => g.name === name)) {
      throw new ConfigError(
        `secrets: ${name} is not one of the --secret grants (pass --secret ${name}@HOST to harness batch)`,
      );
    }
  }
  return grants.filter((g) => chosen.includes(g.name));
}

function checkedEntry(text: string, flag: string): string {
  const parsed = parseAllowEntry(text);
  if (!parsed.ok) throw new ConfigError(`${flag} '${text}': ${parsed.reason}`);
  // Normalized ("example.com:443,80"), so spellings of one entry count once and replay reads it back.
  return parsed.entry.text;
}

function egressConfig(
  allowHosts: string[],
  allowPrivate: boolean,
  limitBytes: number | undefined,
  wildcardNames: number | undefined,
  inherited = false,
): EgressConfig {
  return Object.freeze({
    allowHosts,
    allowPrivate,
    limitBytes: limitBytes ?? SANDBOX_DEFAULTS.egressLimitBytes,
    ...(wildcardNames === undefined ? {} : { wildcardNames }),
    ...(inherited ? { inherited } : {}),
  });
}

export function loadAgentConfig(env: NodeJS.ProcessEnv, flags: CliFlags): Readonly<AgentConfig> {
  const apiKey = env["ANTHROPIC_API_KEY"]?.trim();
  if (!apiKey) {
    throw new ConfigError(
      "ANTHROPIC_API_KEY is not set: put ANTHROPIC_API_KEY=... in a .env file in the current directory (see .env.example) or export it; to see harness work without a key, replay the example: harness replay examples/hello/transcript.jsonl",
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
  const outputFormat = (flags.outputFormat ?? env["HARNESS_OUTPUT_FORMAT"] ?? "text").trim();
  if (!(OUTPUT_FORMATS as readonly string[]).includes(outputFormat)) {
    throw new ConfigError(`--output-format must be ${OUTPUT_FORMATS.join(", ")}, got '${outputFormat}'`);
  }
  const pricing = resolvePricing(model, env);
  const maxBudgetUsd = positiveNumber(
    "--max-budget-usd",
    flags.maxBudgetUsd ?? env["HARNESS_MAX_BUDGET_USD"],
    false,
  );
  if (maxBudgetUsd !== undefined && pricing === undefined) {
    throw new ConfigError(
      `--max-budget-usd needs prices, and none are known for model '${model}': set ${PRICE_ENV_VARS.join(", ")} (USD per million tokens; input and output at least)`,
    );
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
    outputFormat: outputFormat as OutputFormat,
    maxBudgetUsd,
    pricing,
  });
}
