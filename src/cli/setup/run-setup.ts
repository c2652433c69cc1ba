/**
 * What `harness run` and `harness batch` (through run-task.ts) build alike around an open sandbox:
 * the system prompt, the tools, the agent's limits, the transcript's allowlist facts. One place, so
 * a task in a batch runs exactly as the same task given to `run`.
 */
import type { AgentDeps, AgentLimits } from "../../agent/agent-types.js";
import { buildSystemPrompt } from "../../agent/system-prompt.js";
import type { AgentConfig, EgressConfig, SandboxConfig } from "../../config.js";
import type { TokenUsage } from "../../model/model-client.js";
import { costUsd } from "../../model/pricing.js";
import type { Sandbox } from "../../sandbox/sandbox.js";
import { createBackgroundTool } from "../../tools/background-tool.js";
import { createBashTool } from "../../tools/bash-tool.js";
import { createBlocklist } from "../../tools/blocklist.js";
import { createEditorTool } from "../../tools/editor/editor-tool.js";
import type { OutputStore } from "../../tools/output-store.js";
import { createReadOutputTool } from "../../tools/read-output-tool.js";
import type { Tool } from "../../tools/tool.js";
import type { RunStartEgress } from "../../transcript/transcript-records.js";
import type { ModelSetup } from "./model-setup.js";

/** The system prompt for `sandbox`, opened with `config`; `editor`: the model has the text editor. */
export function systemPromptFor(sandbox: Sandbox, config: SandboxConfig, editor = false): string {
  const { description, egress } = sandbox;
  return buildSystemPrompt({
    workdir: sandbox.workdir,
    network: description.network,
    ...(egress === undefined ? {} : { allowHosts: egress.allowHosts }),
    ...(egress?.wildcardNames === undefined ? {} : { wildcardNames: egress.wildcardNames }),
    ...(egress?.secrets === undefined || egress.secrets.length === 0 ? {} : { secrets: egress.secrets }),
    timeoutSeconds: Math.round(config.timeoutMs / 1000),
    savedOutput: true,
    editor,
    readOnlyPaths: description.readOnlyPaths,
  });
}

/**
 * The model's tools on `sandbox`, cut outputs saved in `outputStore`: with `anthropic`, the schemas
 * Claude was trained on (bash_20250124, the text editor) with read_output and background_processes;
 * else harness's custom bash and read_output.
 */
export function runTools(
  sandbox: Sandbox,
  agentConfig: AgentConfig,
  sandboxConfig: SandboxConfig,
  outputStore: OutputStore,
  anthropic = false,
): Tool[] {
  const blocklist = createBlocklist(agentConfig.blocklist);
  const timeoutMs = sandboxConfig.timeoutMs;
  const bash = createBashTool(sandbox, { timeoutMs, blocklist, outputStore, anthropic });
  if (!anthropic) return [bash, createReadOutputTool(outputStore)];
  return [
    bash,
    createEditorTool(sandbox, { timeoutMs }),
    createReadOutputTool(outputStore),
    createBackgroundTool(sandbox, { timeoutMs }),
  ];
}

/** What the loop gets from the model setup: the context window kept, thinking, effort. */
export function modelDeps(
  setup: ModelSetup,
  outputStore: OutputStore,
): Pick<AgentDeps, "context" | "thinking" | "effort"> {
  return {
    context: { ...setup.context, saveCleared: (text) => outputStore.saveText(text)?.id },
    ...(setup.thinking === undefined ? {} : { thinking: setup.thinking }),
    ...(setup.effort === undefined ? {} : { effort: setup.effort }),
  };
}

/** The agent's limits from the config: turns, tokens, and the USD budget when prices are known. */
export function agentLimits(config: AgentConfig): AgentLimits {
  const { maxBudgetUsd, pricing } = config;
  return {
    maxTurns: config.maxTurns,
    maxTokens: config.maxTokens,
    ...(config.maxTotalTokens ? { maxTotalTokens: config.maxTotalTokens } : {}),
    ...(maxBudgetUsd && pricing
      ? { maxCostUsd: maxBudgetUsd, costOf: (usage: TokenUsage) => costUsd(pricing, usage) }
      : {}),
  };
}

/** Allowlist mode as configured (presets resolved), so a replay gets the same allowlist. */
export function runStartEgress({
  allowHosts,
  allowPrivate,
  limitBytes,
  secrets,
  clientEnv,
}: EgressConfig): RunStartEgress {
  const names = (secrets ?? []).map((s) => `${s.name}@${s.host}`);
  return {
    allowHosts: [...allowHosts],
    allowPrivate,
    limitBytes,
    ...(names.length > 0 ? { secrets: names } : {}),
    ...(clientEnv !== undefined && clientEnv.length > 0 ? { clientEnv: [...clientEnv] } : {}),
  };
}
