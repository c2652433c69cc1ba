/**
 * `--output-format stream-json`: one JSON object per line on stdout as the run happens. The line types
 * follow Claude Code's stream-json (`system`/init, `assistant` with the whole API message, `user` with
 * `tool_result` blocks, `result` last); what only harness knows about a command (exit code, duration,
 * timeout, truncation) rides along in a `harness` object; allowlist mode adds a `system`/`egress` line per
 * gateway connection. Documented in docs/output-formats.md.
 */
import type { AgentRunResult } from "../agent/agent-types.js";
import type { ContextEdit } from "../agent/context/context-edits.js";
import type { AgentEvents } from "../agent/events.js";
import type { EgressMonitor, EgressRecord, SandboxDescription } from "../sandbox/sandbox.js";
import { HARNESS_VERSION } from "../version.js";
import { apiUsage, type ResultMessage } from "./result-summary.js";
import { assistantMessage, toolResultMessage } from "./stream-json-messages.js";

/** What the init line reports about the sandbox. */
export interface SandboxFacts {
  /** The sandbox as the contract describes it. */
  description: SandboxDescription;
  /** Default per-command timeout, in ms. */
  timeoutMs: number;
  /** Allowlist mode's gateway, when the sandbox has one. */
  egress?: EgressMonitor | undefined;
}

/** Allowlist mode's policy, as the init line reports it. */
export interface InitEgress {
  /** The allow entries in force, normalized (`host:ports`). */
  allow_hosts: string[];
  /** `--allow-private` was given. */
  allow_private: boolean;
  /** Most bytes the run's connections may carry (`--egress-limit`). */
  limit_bytes: number;
}

/** The run's limits, as the init line reports them. */
export interface InitLimits {
  /** Most model calls (`--max-turns`). */
  max_turns: number;
  /** Output budget per response (`--max-tokens`). */
  max_tokens: number;
  /** Token budget over the run (`--max-total-tokens`), or null. */
  max_total_tokens: number | null;
  /** Estimated-cost budget over the run in USD (`--max-budget-usd`), or null. */
  max_budget_usd: number | null;
  /** Default per-command timeout, in ms (`--timeout`). */
  command_timeout_ms: number;
  /** Container memory limit in bytes. */
  memory_bytes: number;
  /** Container CPU limit in cores. */
  cpus: number;
  /** Container process limit. */
  pids: number;
}

/** The first line: what the run works with. */
export interface InitMessage {
  type: "system";
  subtype: "init";
  /** The model id harness asks for. */
  model: string;
  /** Host path of the workspace (real path). */
  workspace: string;
  /** Container path where commands start (the workspace's mount point). */
  cwd: string;
  /** The sandbox image. */
  image: string;
  /** The container's network mode; "allowlist" when the only way out is harness's gateway. */
  network: string;
  /** Allowlist mode's policy; only in allowlist mode. */
  egress?: InitEgress;
  /** "uid:gid" commands run as. */
  user: string;
  /** OCI runtime, or null for the engine's default. */
  runtime: string | null;
  /** The sandbox container's id. */
  container_id: string;
  /** Names of the tools the model may call. */
  tools: string[];
  /** The run's limits. */
  limits: InitLimits;
  /** The run's id. */
  run_id: string;
  /** The run's id, under Claude Code's name. */
  session_id: string;
  /** harness's version. */
  harness_version: string;
}

export interface StreamJsonOutputOptions {
  /** Writes one JSON object as one line. */
  writeJson: (message: object) => void;
  /** The model id. */
  model: string;
  /** The run's id. */
  runId: string;
  /** The USD budget, for the init line. */
  maxBudgetUsd: number | undefined;
  /** The sandbox the run uses. */
  sandbox: SandboxFacts;
  /** The result line for a finished run. */
  summarize: (result: AgentRunResult) => ResultMessage;
}

export function createStreamJsonOutput(options: StreamJsonOutputOptions): AgentEvents {
  const { writeJson, sandbox, runId } = options;
  // Every line carries the run's id, as Claude Code's do, so interleaved logs can be told apart.
  const emit = (message: object) => writeJson({ ...message, session_id: runId });
  return {
    onRunStart: (info) => {
      const d = sandbox.description;
      const init: InitMessage = {
        type: "system",
        subtype: "init",
        model: options.model,
        workspace: d.workspace,
        cwd: d.workdir,
        image: d.image,
        network: d.network,
        ...(sandbox.egress === undefined ? {} : { egress: initEgress(sandbox.egress) }),
        user: d.user,
        runtime: d.runtime ?? null,
        container_id: d.id,
        tools: info.tools,
        limits: {
          max_turns: info.limits.maxTurns,
          max_tokens: info.limits.maxTokens,
          max_total_tokens: info.limits.maxTotalTokens ?? null,
          max_budget_usd: options.maxBudgetUsd ?? null,
          command_timeout_ms: sandbox.timeoutMs,
          memory_bytes: d.limits.memoryBytes,
          cpus: d.limits.cpus,
          pids: d.limits.pidsLimit,
        },
        run_id: runId,
        session_id: runId,
        harness_version: HARNESS_VERSION,
      };
      emit(init);
    },
    onUserMessage: (text) =>
      emit({ type: "user", message: { role: "user", content: [{ type: "text", text }] } }),
    onAssistantTurn: (response) => emit({ type: "assistant", message: assistantMessage(response) }),
    onToolResult: (call, result) => emit(toolResultMessage(call, result)),
    onNotice: (text) => emit({ type: "system", subtype: "notice", text }),
    onContextEdit: (edit) => emit(contextEditMessage(edit)),
    onEgress: (record) => emit(egressMessage(record)),
    onRunEnd: (result) => emit(options.summarize(result)),
  };
}

/**
 * A compaction (the API's, or harness's own summary) as Claude Code's `system`/`compact_boundary`
 * line, with what harness knows beside it; cleared tool results as a `system`/`context_edit` line.
 */
function contextEditMessage(edit: ContextEdit) {
  switch (edit.kind) {
    case "compaction":
      return {
        type: "system",
        subtype: "compact_boundary",
        compact_metadata: { trigger: "auto", strategy: "server", context_tokens: edit.contextTokens },
        dropped_messages: edit.droppedMessages,
        ...(edit.usage === undefined ? {} : { usage: apiUsage(edit.usage) }),
      };
    case "summary":
      return {
        type: "system",
        subtype: "compact_boundary",
        compact_metadata: { trigger: "auto", strategy: "client", pre_tokens: edit.tokensBefore },
        post_tokens: edit.tokensAfter,
        kept_messages: edit.keptMessages,
        summary: edit.summary,
        usage: apiUsage(edit.usage),
      };
    case "clear_tool_results":
      return {
        type: "system",
        subtype: "context_edit",
        edit: "clear_tool_results",
        tool_use_ids: edit.cleared.map((c) => c.toolUseId),
        pre_tokens: edit.tokensBefore,
        post_tokens: edit.tokensAfter,
      };
  }
}

function initEgress(monitor: EgressMonitor): InitEgress {
  return {
    allow_hosts: [...monitor.allowHosts],
    allow_private: monitor.allowPrivate,
    limit_bytes: monitor.limitBytes,
  };
}

/** One gateway connection as a `system`/`egress` line: every field, `null` where the record has none. */
function egressMessage(record: EgressRecord) {
  return {
    type: "system",
    subtype: "egress",
    opened_at: record.time,
    tool_use_id: record.callId ?? null,
    host: record.host,
    port: record.port,
    method: record.method,
    allowed: record.allowed,
    reason: record.reason ?? null,
    address: record.address ?? null,
    status: record.status ?? null,
    // Only on a record that carried a `--secret` (or was refused for one): its names, never a value.
    ...(record.secrets === undefined ? {} : { secrets: record.secrets }),
    bytes_up: record.bytesUp,
    bytes_down: record.bytesDown,
    duration_ms: Math.round(record.durationMs),
  };
}
