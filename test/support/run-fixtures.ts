/**
 * Fake past runs in a temporary state directory: transcripts with the writer's record shapes (the
 * types of src/transcript/transcript-records.ts), saved outputs, and chosen modification times.
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TokenUsage } from "../../src/model/model-client.js";
import type { TranscriptRecord } from "../../src/transcript/transcript-records.js";

/** A pid no process can have (above the kernel's largest pid_max, 2^22). */
export const DEAD_PID = 9_999_999;

/** A temporary XDG_STATE_HOME; `runs` is its harness/runs directory. Removed on dispose. */
export function makeStateHome(): { home: string; runs: string; env: NodeJS.ProcessEnv } & Disposable {
  const home = mkdtempSync(join(tmpdir(), "harness-runs-test-"));
  const runs = join(home, "harness", "runs");
  mkdirSync(runs, { recursive: true });
  return {
    home,
    runs,
    env: { XDG_STATE_HOME: home },
    [Symbol.dispose]: () => rmSync(home, { recursive: true, force: true }),
  };
}

/** A run id as `harness run` makes it. */
export function runIdAt(ms: number, pid = DEAD_PID): string {
  return `${new Date(ms).toISOString().replace(/[:.]/g, "-")}-${pid}`;
}

export function usageOf(input: number, output: number): TokenUsage {
  return { inputTokens: input, outputTokens: output, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 };
}

export interface FakeRun {
  task?: string;
  workspace?: string;
  model?: string;
  /** Commands run, each with an exit code. */
  commands?: Array<{ command: string; exitCode: number; stderr?: string; notices?: string[] }>;
  /** Omit for a run that never ended. */
  end?: { status: string; turns: number; usage: TokenUsage; finalText?: string };
  /** Bytes of filler in one tool_result's stdout (a big transcript). */
  fillerBytes?: number;
}

/** The records of a fake run, in the writer's order. */
export function fakeRecords(run: FakeRun, startMs: number): TranscriptRecord[] {
  const time = (offset: number) => new Date(startMs + offset).toISOString();
  const usage = usageOf(1000, 100);
  const records: TranscriptRecord[] = [
    {
      type: "run_start",
      time: time(0),
      task: run.task ?? "do the thing",
      system: "You are a coding agent.",
      tools: ["bash", "read_output"],
      limits: { maxTurns: 50, maxTokens: 8000 },
      commandTimeoutMs: 120_000,
      ...(run.workspace === undefined ? {} : { workspace: run.workspace }),
    } as TranscriptRecord,
    { type: "user", time: time(1), text: run.task ?? "do the thing" },
  ];
  (run.commands ?? []).forEach((c, i) => {
    const id = `toolu_${i}`;
    records.push(
      {
        type: "assistant",
        time: time(10 + i),
        id: `msg_${i}`,
        model: run.model ?? "claude-sonnet-4-5",
        stopReason: "tool_use",
        content: [
          { type: "text", text: `Running step ${i + 1}.` },
          { type: "tool_use", id, name: "bash", input: { command: c.command } },
        ],
        usage,
      } as TranscriptRecord,
      { type: "tool_call", time: time(11 + i), id, name: "bash", input: { command: c.command } },
      {
        type: "tool_result",
        time: time(12 + i),
        id,
        name: "bash",
        isError: c.exitCode !== 0,
        content: `exit ${c.exitCode}`,
        command: c.command,
        stdout: i === 0 && run.fillerBytes ? "x".repeat(run.fillerBytes) : "ok\n",
        stderr: c.stderr ?? "",
        exitCode: c.exitCode,
        durationMs: 42,
        timedOut: false,
        canceled: false,
        oomKilled: false,
        truncated: false,
        stdoutBytes: 3,
        stderrBytes: 0,
        notices: c.notices ?? [],
      },
      { type: "usage", time: time(13 + i), usage, total: usage },
    );
  });
  if (run.end) {
    records.push(
      {
        type: "assistant",
        time: time(100),
        id: "msg_last",
        model: run.model ?? "claude-sonnet-4-5",
        stopReason: "end_turn",
        content: [{ type: "text", text: run.end.finalText ?? "Done." }],
        usage,
      } as TranscriptRecord,
      {
        type: "run_end",
        time: time(101),
        status: run.end.status,
        turns: run.end.turns,
        usage: run.end.usage,
        finalText: run.end.finalText ?? "Done.",
      } as TranscriptRecord,
    );
  }
  return records;
}

export function toJsonl(records: readonly unknown[]): string {
  return records.map((record) => `${JSON.stringify(record)}\n`).join("");
}

/** Writes run `id` (transcript, and `outputsBytes` of saved output) and sets the mtime of all its files. */
export function writeRun(
  runsDir: string,
  id: string,
  options: {
    text?: string;
    run?: FakeRun;
    startMs?: number;
    /** Bytes of saved output, split over `outputFiles` files (default 1). */
    outputsBytes?: number;
    outputFiles?: number;
    mtimeMs?: number;
  },
): { transcript: string; outputs: string } {
  const transcript = join(runsDir, `${id}.jsonl`);
  const outputs = join(runsDir, `${id}.outputs`);
  const startMs = options.startMs ?? Date.now();
  writeFileSync(transcript, options.text ?? toJsonl(fakeRecords(options.run ?? {}, startMs)));
  const files = options.outputsBytes ? Math.max(1, options.outputFiles ?? 1) : 0;
  const saved = Array.from({ length: files }, (_, i) => join(outputs, `out-${i + 1}.stdout`));
  if (files > 0) mkdirSync(outputs);
  saved.forEach((path, i) => {
    const share = Math.floor((options.outputsBytes ?? 0) / files);
    writeFileSync(
      path,
      Buffer.alloc(i === 0 ? (options.outputsBytes ?? 0) - share * (files - 1) : share, 0x61),
    );
  });
  if (options.mtimeMs !== undefined) {
    const seconds = options.mtimeMs / 1000;
    for (const path of [...saved, ...(files > 0 ? [outputs] : []), transcript])
      utimesSync(path, seconds, seconds);
  }
  return { transcript, outputs };
}
