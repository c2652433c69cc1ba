/** A `RunOutput` writing into memory, with a fake clock, and the sandbox facts its init line reports. */
import { Writable } from "node:stream";
import { exitCodeFor } from "../../src/cli/exit-codes.js";
import { lookupPricing } from "../../src/model/pricing.js";
import { createRunOutput, type RunOutputOptions } from "../../src/output/run-output.js";
import type { SandboxFacts } from "../../src/output/stream-json-output.js";

function capture() {
  const writes: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      writes.push(String(chunk));
      done();
    },
  });
  return { stream, text: () => writes.join("") };
}

export const sandboxFacts: SandboxFacts = {
  description: {
    id: "c0ffee",
    isolation: "bind",
    image: "harness-sandbox:test",
    workspace: "/home/me/proj",
    workdir: "/workspace",
    user: "1000:1000",
    network: "none",
    runtime: undefined,
    limits: { memoryBytes: 2 * 1024 ** 3, cpus: 2, pidsLimit: 512 },
    readOnlyPaths: [],
  },
  timeoutMs: 120_000,
};

/** Every clock read advances 250 ms. The model is Sonnet 4.x, priced. */
export function setupOutput(format: RunOutputOptions["format"], extra: Partial<RunOutputOptions> = {}) {
  const stdout = capture();
  const stderr = capture();
  let clock = 1000;
  const output = createRunOutput({
    format,
    model: "claude-sonnet-4-5",
    runId: "run-1",
    transcriptPath: "/tmp/run-1.jsonl",
    pricing: lookupPricing("claude-sonnet-4-5"),
    maxBudgetUsd: undefined,
    stdout: stdout.stream,
    stderr: stderr.stream,
    now: () => (clock += 250),
    exitCodeFor,
    ...extra,
  });
  /** stdout's lines, parsed. */
  const lines = () =>
    stdout
      .text()
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { output, stdout, stderr, lines };
}
