/**
 * What `harness run` and `harness batch` (through run-task.ts) build alike around an open sandbox:
 * the system prompt, the tools, the agent's limits, the transcript's allowlist facts. One place, so
 * a task in a batch runs exactly as the same task given to `run`.
 */
import type { AgentLimits } from "../agent/agent-types.js";
import { buildSystemPrompt } from "../agent/system-prompt.js";
import type { AgentConfig, EgressConfig, SandboxConfig } from "../config.js";
import type { TokenUsage } from "../model/model-client.js";
import { costUsd } from "../model/pricing.js";
import type { Sandbox } from "../sandbox/sandbox.js";
import { createBashTool } from "../tools/bash-tool.js";
import { createBlocklist } from "../tools/blocklist.js";
import type { OutputStore } from "../tools/output-store.js";
import { createReadOutputTool } from "../tools/read-output-tool.js";
import type { Tool } from "../tools/tool.js";
import type { RunStartEgress } from "../transcript/transcript-records.js";

/** The system prompt for `sandbox`, opened with `config`. */
export function systemPromptFor(sandbox: Sandbox, config: SandboxConfig): string {
  const { description, egress } = sandbox;
  return buildSystemPrompt({
    workdir: sandbox.workdir,
    network: description.network,
    ...(egress === undefined ? {} : { allowHosts: egress.allowHosts }),
    ...(egress?.wildcardNames === undefined ? {} : { wildcardNames: egress.wildcardNames }),
    ...(egress?.secrets === undefined || egress.secrets.length === 0 ? {} : { secrets: egress.secrets }),
    timeoutSeconds: Math.round(config.timeoutMs / 1000),
    savedOutput: true,
    readOnlyPaths: description.readOnlyPaths,
  });
}

/** bash and read_output, on `sandbox`, with cut outputs saved in `outputStore`. */
export function runTools(
  sandbox: Sandbox,
  agentConfig: AgentConfig,
  sandboxConfig: SandboxConfig,
  outputStore: OutputStore,
): Tool[] {
  const blocklist = createBlocklist(agentConfig.blocklist);
  return [
    createBashTool(sandbox, { timeoutMs: sandboxConfig.timeoutMs, blocklist, outputStore }),
    createReadOutputTool(outputStore),
  ];
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
