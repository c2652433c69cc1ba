/**
 * What a run learns about its model before it starts, and what follows from it, for `run` and
 * `batch` alike: the window and capabilities (the Models API, once per model and endpoint, cached;
 * the table and `--context-window` otherwise), which tools the model gets, how the context window is
 * managed, and `--thinking`/`--effort` refused in one line when the Models API says the model lacks them.
 */
import type { ContextOptions } from "../../agent/context/context-manager.js";
import {
  chooseStrategy,
  contextLimits,
  MIN_COMPACTION_TRIGGER,
} from "../../agent/context/context-manager.js";
import type { AgentConfig } from "../../config.js";
import { ConfigError } from "../../errors.js";
import { lookupModel, type ModelLookup } from "../../model/model-catalog.js";
import type { EffortLevel, ThinkingSetting } from "../../model/model-client.js";
import type { ModelProfile } from "../../model/model-profile.js";
import { modelCache } from "../../state/model-cache.js";

/** What the run does with its model. */
export interface ModelSetup {
  /** What is known of the model. */
  lookup: ModelLookup;
  /** Anthropic's own tools (bash_20250124, the text editor) rather than harness's custom ones. */
  anthropicTools: boolean;
  /** The context window and how it is kept (agent/context/). */
  context: Pick<ContextOptions, "window" | "strategy">;
  thinking: ThinkingSetting | undefined;
  effort: EffortLevel | undefined;
}

/** Asks about the model (the cache first). `describe` is the model client's Models API call. */
export function lookupModelFor(
  config: AgentConfig,
  env: NodeJS.ProcessEnv,
  describe: () => Promise<ModelProfile | undefined>,
): Promise<ModelLookup> {
  return lookupModel({
    model: config.model,
    endpoint: config.baseURL ?? "https://api.anthropic.com",
    describe,
    cache: modelCache(env),
    contextWindow: config.contextWindow,
  });
}

/** The run's model setup; throws `ConfigError` for a setting the model cannot take. */
export function modelSetup(config: AgentConfig, lookup: ModelLookup): ModelSetup {
  const { profile } = lookup;
  const caps = profile.capabilities;
  const says = `the Models API says ${config.model}`;
  const { thinking, effort } = config;
  if (caps !== undefined && thinking !== undefined) {
    if (thinking.type === "adaptive" && !caps.thinkingAdaptive)
      throw new ConfigError(
        `--thinking adaptive: ${says} does not support adaptive thinking${caps.thinkingEnabled ? " (give a budget instead, e.g. --thinking 4096)" : ""}`,
      );
    if (thinking.type === "enabled" && !caps.thinkingEnabled)
      throw new ConfigError(
        `--thinking ${thinking.budgetTokens}: ${says} does not take a thinking budget${caps.thinkingAdaptive ? " (use --thinking adaptive)" : ""}`,
      );
    if (thinking.type === "disabled" && !caps.thinkingDisabled)
      throw new ConfigError(`--thinking off: ${says} cannot have thinking turned off`);
  }
  if (caps !== undefined && effort !== undefined && !caps.effort.includes(effort))
    throw new ConfigError(
      `--effort ${effort}: ${says} ${caps.effort.length === 0 ? "does not support effort" : `supports effort ${caps.effort.join(", ")} only`}`,
    );
  const window = profile.contextWindow;
  const mode = config.contextManagement;
  if (mode === "server") {
    if (caps !== undefined && !caps.compaction)
      throw new ConfigError(`--context-management server: ${says} does not support server-side compaction`);
    if (contextLimits(window, config.maxTokens).highWater < MIN_COMPACTION_TRIGGER)
      throw new ConfigError(
        `--context-management server: a ${window.toLocaleString("en-US")}-token window with --max-tokens ${config.maxTokens} leaves no room for the API's smallest compaction trigger (${MIN_COMPACTION_TRIGGER.toLocaleString("en-US")} tokens); use client`,
      );
  }
  const strategy = chooseStrategy(mode, caps?.compaction ?? mode === "server", window, config.maxTokens);
  return {
    lookup,
    anthropicTools: config.tools === "anthropic" || (config.tools === "auto" && lookup.modelsApi),
    context: { window, strategy },
    thinking,
    effort,
  };
}
