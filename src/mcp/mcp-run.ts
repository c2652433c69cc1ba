/**
 * An MCP session as a run (`harness runs`), from its first tool call on. A connection that only
 * initializes and lists the tools (a client's health check: Claude Code opens one for each) leaves
 * nothing behind: no transcript, no checkpoints, no saved outputs. The first call writes run_start
 * and takes the checkpoint of the workspace before it; each call then takes one after it, as in
 * `harness run`; the session's end writes run_end. A connection through the sandbox's gateway or a
 * published port is something that happened in the session too: it begins the run as well, so that
 * its record has a transcript to go in.
 */
import type { StepCheckpoints } from "../agent/agent-types.js";
import type { AgentEvents, RunStartInfo } from "../agent/events.js";
import type { EgressRecord, PublishRecord } from "../sandbox/sandbox.js";
import type { Transcript } from "../transcript/transcript.js";
import type { RunEndRecord } from "../transcript/transcript-records.js";

/** A run's checkpoints (cli/setup/run-checkpoints.ts) as far as a session uses them. */
export interface SessionCheckpoints extends StepCheckpoints {
  /** Waits for the last snapshot, then lets go of what they hold. Contract: never rejects. */
  close(): Promise<void>;
}

export interface McpRunOptions {
  transcript: Transcript;
  /** The run_start's facts. */
  start: RunStartInfo;
  /** Opens the run's checkpoints; undefined when they are off. Contract: never rejects. */
  openCheckpoints: () => Promise<SessionCheckpoints | undefined>;
}

const NO_USAGE = { inputTokens: 0, outputTokens: 0, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };

export class McpRun {
  private begun: Promise<SessionCheckpoints | undefined> | undefined;
  private over = false;
  private count = 0;

  constructor(private readonly options: McpRunOptions) {}

  /** True once the session became a run (its run_start is written). */
  get started(): boolean {
    return this.begun !== undefined;
  }

  /** Tool calls made so far. */
  get calls(): number {
    return this.count;
  }

  /**
   * Begins the run, once: run_start (written before this returns), then the checkpoints and the
   * snapshot before the first call. Resolves with the checkpoints. After the session's end nothing
   * begins: a connection that ends while the sandbox stops is not a run of its own. Never rejects.
   */
  begin(): Promise<StepCheckpoints | undefined> {
    if (this.begun === undefined && this.over) return Promise.resolve(undefined);
    this.begun ??= (async () => {
      this.options.transcript.onRunStart(this.options.start);
      const checkpoints = await this.options.openCheckpoints();
      await checkpoints?.start().catch(() => undefined);
      return checkpoints;
    })();
    return this.begun;
  }

  /** The transcript's listeners for the calls, counting them. */
  get events(): AgentEvents {
    const { transcript } = this.options;
    return {
      ...transcript,
      onToolCall: (call) => {
        this.count += 1;
        transcript.onToolCall(call);
      },
    };
  }

  /** A connection through the gateway ended: recorded in the run, which it begins if need be. */
  onEgress(record: EgressRecord): void {
    void this.begin();
    if (this.started) this.options.transcript.onEgress(record);
  }

  /** A connection through a published port ended: recorded as `onEgress` is. */
  onPublish(record: PublishRecord): void {
    void this.begin();
    if (this.started) this.options.transcript.onPublish(record);
  }

  /** Waits for the last checkpoint and lets the checkpoints go. Never rejects. */
  async closeCheckpoints(): Promise<void> {
    const checkpoints = await this.begun;
    await checkpoints?.close();
  }

  /** The session is over: run_end, when it was a run. No run begins after this. */
  end(status: RunEndRecord["status"], finalText: string): void {
    this.over = true;
    if (!this.started) return;
    this.options.transcript.onRunEnd({ status, messages: [], turns: 0, usage: NO_USAGE, finalText });
  }
}
