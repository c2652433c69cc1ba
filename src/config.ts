/**
 * Settings from flags and environment (after `.env` is loaded), validated once and frozen.
 * Explicit flags win over env; env is read when `loadConfig` is called, not at import, so a `.env`
 * loaded later still applies. Each setting's flag, variable, parser and default are the table's
 * (src/settings/); this file decides what they mean together.
 */

import {
  type AllowPreset,
  allowPresetGrant,
  isClientEnv,
  PRESET_NAMES,
  parseAllowPreset,
  presetFlag,
} from "./allow-presets/allow-presets.js";
import { loadDevcontainer } from "./devcontainer/load-devcontainer.js";
import { ConfigError } from "./errors.js";
import type { EffortLevel, ThinkingSetting } from "./model/model-client.js";
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
import {
  type ContextMode,
  OUTPUT_FORMATS,
  type OutputFormat,
  type ToolSet,
} from "./settings/agent-settings.js";
import { ENGINES, type SandboxEngine } from "./settings/engine-settings.js";
import { parseByteSize } from "./settings/parsers.js";
import { readSettings } from "./settings/read-setting.js";
import { flagName } from "./settings/setting.js";
import { SETTINGS, type SettingFlags } from "./settings/settings.js";

export { ENGINES, OUTPUT_FORMATS, type OutputFormat, parseByteSize, type SandboxEngine };

/**
 * Flags as commander parses them, every one optional: one field per setting of the table
 * (src/settings/), typed by its flag (text, list or switch).
 */
export interface CliFlags extends SettingFlags {
  /** A batch task's `secrets`: only these of the `--secret` grants (names). Not a command-line flag. */
  secretNames?: string[];
}

/** The sandbox request (sandbox-request.ts) as flags and env give it, with what the CLI always decides. */
export interface SandboxConfig extends SandboxRequest {
  /** `--engine`/HARNESS_ENGINE; default docker. */
  engine: SandboxEngine;
  /** Kubernetes only: `--kube-context`, `--namespace`/HARNESS_NAMESPACE, `--kube-seccomp-profile`. */
  kubeContext?: string | undefined;
  namespace?: string | undefined;
  seccompProfile?: string | undefined;
  /** Kubernetes only: `--kube-warm-pool`, a SandboxWarmPool to claim the pod from. */
  warmPool?: string | undefined;
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
  inheritEgress?: Pick<EgressRequest, "allowHosts" | "limitBytes" | "requestRules" | "clientEnv"> | undefined;
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
  /** `--context-window`: the window when the Models API does not say; undefined: ask it, else the table. */
  contextWindow: number | undefined;
  /** `--context-management`. */
  contextManagement: ContextMode;
  /** `--thinking`; undefined: the model's default. */
  thinking: ThinkingSetting | undefined;
  /** `--effort`; undefined: the model's default. */
  effort: EffortLevel | undefined;
  /** `--tools`. */
  tools: ToolSet;
}

/** "2g", "512m", "1024k" or plain bytes, for --memory. */
export function parseMemory(value: string | undefined): number | undefined {
  return parseByteSize("--memory", value);
}

export function loadSandboxConfig(
  env: NodeJS.ProcessEnv,
  flags: CliFlags,
  options: SandboxConfigOptions = {},
): Readonly<SandboxConfig> {
  const read = readSettings(flags, env);
  const user = read.value("user");
  const engine = read.value("engine");
  const isolation = read.value("isolation") ?? (engine === "kubernetes" ? "copy" : "bind");
  const network = read.value("network");
  const workspace = read.text("workspace") ?? process.cwd();
  const devcontainer = flags.devcontainer ?? false;
  if (devcontainer !== false && engine !== "docker")
    throw new ConfigError(
      "--devcontainer works with --engine docker only (its image is built on the engine)",
    );
  return Object.freeze({
    engine,
    ...(engine === "kubernetes"
      ? {
          kubeContext: flags.kubeContext,
          namespace: read.text("namespace"),
          seccompProfile: flags.kubeSeccompProfile,
          warmPool: flags.kubeWarmPool,
        }
      : {}),
    workspace,
    image: read.text("image"),
    network,
    user,
    runtime: read.text("runtime"),
    memoryBytes: read.value("memory"),
    tmpSizeMiB: read.value("tmpSize"),
    homeSizeMiB: read.value("homeSize"),
    cpus: read.value("cpus"),
    pidsLimit: read.value("pids"),
    protect: Object.freeze({
      disabled: flags.protect === false,
      extraPaths: (flags.protect || []).map(normalizeProtectPath),
    }),
    isolation,
    isolationExplicit: flags.isolation !== undefined,
    dockerContext: read.text("context"),
    copyLimitBytes: read.value("copyLimit"),
    copyMaxFiles: read.value("copyMaxFiles"),
    timeoutMs: read.value("timeout"),
    egress: loadEgressConfig(env, flags, network, options.inheritEgress),
    ...(flags.publish === undefined ? {} : { publish: parsePublishFlags(flags.publish) }),
    ...(devcontainer === false
      ? {}
      : { devcontainer: loadDevcontainer(workspace, devcontainer === true ? undefined : devcontainer) }),
    // On unless --no-package-cache: a flag only, so a .env the sandbox wrote cannot switch it.
    packageCache: flags.packageCache === false ? undefined : { maxBytes: read.value("packageCacheMax") },
  });
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
  const read = readSettings(flags, env);
  const { items: hosts, fromEnv } = read.list("allowHost");
  const presets = read.list("allow").items.map((text): AllowPreset => {
    const preset = parseAllowPreset(text);
    if (preset === undefined) throw new ConfigError(`--allow must be ${PRESET_NAMES}, got '${text}'`);
    return preset;
  });
  // Empty is unset (read-setting.ts): compose passes HARNESS_EGRESS_LIMIT through as "" when not given.
  const limitBytes = read.value("egressLimit");
  const allowPrivate = flags.allowPrivate === true;
  const wildcardNames = read.value("egressWildcardNames");
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
      // A transcript is a file: only the variables a preset may set come from it.
      const recordedEnv = (inherited.clientEnv ?? []).filter(isClientEnv);
      return Object.freeze({ ...config, ...extras(rules), ...clientEnvOf(recordedEnv) });
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
  const hostsFrom = fromEnv ? SETTINGS.allowHost.env : flagName(SETTINGS.allowHost);
  const entries = hosts.map((text) => checkedEntry(text, hostsFrom));
  const clientEnv: string[] = [];
  for (const preset of presets) {
    const grant = allowPresetGrant(preset, env);
    for (const text of grant.hosts) entries.push(checkedEntry(text, presetFlag(preset)));
    clientEnv.push(...grant.env);
  }
  const config = egressConfig([...new Set(entries)], allowPrivate, limitBytes, wildcardNames);
  return Object.freeze({ ...config, ...extras(requestRules), ...clientEnvOf(clientEnv) });
}

/**
 * `--secret NAME@HOST` (or HARNESS_SECRETS, entries separated by spaces), each value read from
 * `env[NAME]` now. A `.env` the sandbox may have written never sets NAME (dotenv-keys.ts guards
 * every key it does not know) nor HARNESS_SECRETS (a widening key).
 */
function loadSecrets(env: NodeJS.ProcessEnv, flags: CliFlags): SecretGrant[] {
  const { items: texts, fromEnv } = readSettings(flags, env).list("secret");
  const flag = fromEnv ? SETTINGS.secret.env : flagName(SETTINGS.secret);
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

/** The presets' variables, each key once (a later preset's value wins), or nothing. */
function clientEnvOf(entries: readonly string[]): { clientEnv?: string[] } {
  const byKey = new Map(entries.map((entry) => [entry.slice(0, entry.indexOf("=")), entry]));
  return byKey.size === 0 ? {} : { clientEnv: [...byKey.values()] };
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
  const read = readSettings(flags, env);
  const apiKey = read.text("apiKey")?.trim();
  if (!apiKey) {
    throw new ConfigError(
      "ANTHROPIC_API_KEY is not set: put ANTHROPIC_API_KEY=... in a .env file in the current directory (see .env.example) or export it; to see harness work without a key, replay the example: harness replay examples/hello/transcript.jsonl",
    );
  }
  const model = read.text("model")?.trim();
  if (!model) {
    throw new ConfigError("no model given: put MODEL_ID=... in .env (see .env.example) or pass --model");
  }
  const baseURL = read.text("baseURL")?.trim();
  if (baseURL !== undefined && !/^https?:\/\//.test(baseURL)) {
    throw new ConfigError(`ANTHROPIC_BASE_URL must be an http(s) URL, got '${baseURL}'`);
  }
  const outputFormat = read.value("outputFormat");
  const pricing = resolvePricing(model, env);
  const maxBudgetUsd = read.value("maxBudgetUsd");
  if (maxBudgetUsd !== undefined && pricing === undefined) {
    throw new ConfigError(
      `--max-budget-usd needs prices, and none are known for model '${model}': set ${PRICE_ENV_VARS.join(", ")} (USD per million tokens; input and output at least)`,
    );
  }
  const maxTokens = read.value("maxTokens");
  const thinking = read.value("thinking");
  if (thinking?.type === "enabled" && thinking.budgetTokens >= maxTokens)
    throw new ConfigError(
      `--thinking ${thinking.budgetTokens} must be below --max-tokens (${maxTokens}): thinking counts toward each response's max_tokens`,
    );
  return Object.freeze({
    apiKey,
    model,
    baseURL,
    maxTurns: read.value("maxTurns"),
    maxTokens,
    maxTotalTokens: read.value("maxTotalTokens"),
    blocklist: Object.freeze({
      disabled: flags.blocklist === false,
      extraPatterns: [...(flags.block ?? [])],
    }),
    outputFormat,
    maxBudgetUsd,
    pricing,
    contextWindow: read.value("contextWindow"),
    contextManagement: read.value("contextManagement"),
    thinking,
    effort: read.value("effort"),
    tools: read.value("tools"),
  });
}
