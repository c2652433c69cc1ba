/**
 * What `harness run` prints, per `--output-format`: `text` is the terminal renderer on stdout, for
 * people; `json` and `stream-json` keep stdout for JSON alone (docs/output-formats.md), so a program
 * can parse it while people read stderr. An `AgentEvents` listener, combined with the transcript.
 */
import type { AgentRunResult } from "../agent/agent-types.js";
import { type AgentEvents, combineEvents } from "../agent/events.js";
import type { ExitStatus } from "../agent/exit-status.js";
import type { OutputFormat } from "../config.js";
import type { ModelClient, TokenUsage } from "../model/model-client.js";
import { costUsd } from "../model/pricing.js";
import { ZERO_USAGE } from "../model/usage.js";
import { colorEnabled } from "../terminal/style.js";
import { createTerminalRenderer } from "../terminal/terminal-renderer.js";
import { scrubSecrets } from "../transcript/transcript.js";
import { timeModelCalls } from "./api-time.js";
import { createEgressSummary } from "./egress-summary.js";
import { EgressTally } from "./egress-tally.js";
import { createJsonOutput } from "./json-output.js";
import { buildResult, type Ending, type ResultMessage, type RunFacts } from "./result-summary.js";
import { createStreamJsonOutput, type SandboxFacts } from "./stream-json-output.js";

type Stream = NodeJS.WritableStream & { isTTY?: boolean };

export interface RunOutputOptions extends RunFacts {
  /** The output format. */
  format: OutputFormat;
  /** Where the run's transcript goes. */
  transcriptPath: string;
  /** Default: process.stdout. */
  stdout?: Stream;
  /** Default: process.stderr. */
  stderr?: Stream;
  /** Milliseconds clock, for tests. */
  now?: () => number;
  /** The process exit code for a run that ended with `status`: the CLI's table (src/cli/exit-codes.ts). */
  exitCodeFor: (status: ExitStatus) => number;
}

export interface RunOutput {
  /** Wraps the model client so the time spent on the API is counted for `duration_api_ms`. */
  timeModelCalls(model: ModelClient): ModelClient;
  /** The listener for the run's events, once the sandbox is up (the init line reports it). */
  listener(sandbox: SandboxFacts): AgentEvents;
  /**
   * For a failure before the run (Docker unreachable, unusable workspace): json and stream-json print a
   * result with status "error" so a program still gets one; then `error` is rethrown for the CLI.
   */
  fail(error: unknown, exitCode: number): never;
}

export function createRunOutput(options: RunOutputOptions): RunOutput {
  const stdout = options.stdout ?? process.stdout;
  const stderr = options.stderr ?? process.stderr;
  const now = options.now ?? (() => performance.now());
  const startedAt = now();
  let apiMs = () => 0;
  const { pricing } = options;
  const costOf = pricing === undefined ? undefined : (usage: TokenUsage) => costUsd(pricing, usage);
  // One write per line: a line never interleaves with another writer's output. Secrets are masked
  // in signed blocks too (thinking, compaction), unlike in the transcript: this output is only read,
  // and harness continues a run from its transcript, never from here.
  const writeJson = (message: object) => stdout.write(`${JSON.stringify(scrubSecrets(message))}\n`);
  const result = (ending: Omit<Ending, "durationMs" | "apiDurationMs">): ResultMessage =>
    buildResult(options, { ...ending, durationMs: now() - startedAt, apiDurationMs: apiMs() });
  // Allowlist mode's records for the result's counts; set once the sandbox is known to have a gateway.
  let tally: EgressTally | undefined;
  const summarize = (run: AgentRunResult) =>
    result({
      egress: tally?.counts(),
      status: run.status,
      exitCode: options.exitCodeFor(run.status),
      turns: run.turns,
      usage: run.usage,
      finalText: run.finalText,
      error: run.error,
      transcriptPath: options.transcriptPath,
    });
  const renderer = (out: Stream) =>
    createTerminalRenderer({ out, color: colorEnabled(out), ...(costOf === undefined ? {} : { costOf }) });
  // The text view, with allowlist mode's summary after the run's own.
  const textView = (out: Stream, sandbox: SandboxFacts) =>
    sandbox.egress === undefined
      ? renderer(out)
      : combineEvents(renderer(out), createEgressSummary({ out, color: colorEnabled(out) }));

  return {
    timeModelCalls(model) {
      const timed = timeModelCalls(model, now);
      apiMs = timed.elapsedMs;
      return timed.client;
    },
    listener(sandbox) {
      const counting: AgentEvents = {};
      if (sandbox.egress !== undefined) {
        const counts = new EgressTally();
        tally = counts;
        counting.onEgress = (record) => counts.add(record);
      }
      switch (options.format) {
        case "text":
          return textView(stdout, sandbox);
        case "json":
          return combineEvents(
            textView(stderr, sandbox),
            counting,
            createJsonOutput({ writeJson, summarize }),
          );
        case "stream-json":
          // The stream itself is the progress report: no second copy for people on stderr.
          return combineEvents(
            counting,
            createStreamJsonOutput({ ...options, writeJson, sandbox, summarize }),
          );
      }
    },
    fail(error, exitCode) {
      if (options.format !== "text") {
        const usage = { ...ZERO_USAGE };
        writeJson(
          result({ status: "error", exitCode, turns: 0, usage, finalText: "", error, transcriptPath: null }),
        );
      }
      throw error;
    },
  };
}
