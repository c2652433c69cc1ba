import { describe, expect, it } from "vitest";
import type { AgentRunResult } from "../../../src/agent/agent-types.js";
import { SandboxError } from "../../../src/errors.js";
import type { TokenUsage } from "../../../src/model/model-client.js";
import { costUsd, lookupPricing } from "../../../src/model/pricing.js";
import { fixture } from "../../support/agent-fixture.js";
import { sandboxFacts, setupOutput as setup } from "../../support/run-output-fixture.js";
import {
  answer,
  bash,
  response,
  ScriptedModel,
  text,
  toolCalls,
  usage,
} from "../../support/scripted-model.js";

const sonnet = lookupPricing("claude-sonnet-4-5");
const sonnetCost = (tokens: TokenUsage) => (sonnet === undefined ? 0 : costUsd(sonnet, tokens));

describe("createRunOutput: json", () => {
  it("prints exactly one result object on stdout and the run for people on stderr", async () => {
    const { output, stdout, stderr } = setup("json");
    const { run } = fixture([toolCalls(bash("t1", "ls")), answer("Listed.")], {
      events: output.listener(sandboxFacts),
    });
    await run();
    const printed = stdout.text();
    expect(printed.trim().split("\n")).toHaveLength(1);
    expect(JSON.parse(printed)).toEqual({
      type: "result",
      subtype: "success",
      is_error: false,
      status: "submitted",
      exit_code: 0,
      result: "Listed.",
      num_turns: 2,
      duration_ms: expect.any(Number),
      duration_api_ms: 0,
      usage: {
        input_tokens: 20,
        output_tokens: 10,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
      },
      total_cost_usd: 0.00021,
      model: "claude-sonnet-4-5",
      session_id: "run-1",
      run_id: "run-1",
      transcript_path: "/tmp/run-1.jsonl",
    });
    expect(stderr.text()).toContain("$ ls");
    expect(stderr.text()).toMatch(/submitted · 2 turns · .* · cost ≈ \$0\.00021/);
  });

  it.each([
    ["turn limit", { limits: { maxTurns: 1 } }, {}, "error_max_turns", 3],
    [
      "USD budget",
      { limits: { maxCostUsd: 0.0001, costOf: sonnetCost } },
      { maxBudgetUsd: 0.0001 },
      "error_max_budget_usd",
      3,
    ],
    ["token budget", { limits: { maxTotalTokens: 10 } }, {}, "error_max_total_tokens", 3],
  ] as const)(
    "names a %s in Claude Code's words",
    async (_name, fixtureOptions, outputOptions, subtype, code) => {
      const { output, lines } = setup("json", outputOptions);
      const { run } = fixture([toolCalls(bash("t1", "ls")), toolCalls(bash("t2", "ls"))], {
        ...fixtureOptions,
        events: output.listener(sandboxFacts),
      });
      await run();
      expect(lines()[0]).toMatchObject({
        subtype,
        is_error: true,
        exit_code: code,
        status: expect.any(String),
      });
    },
  );

  it("reports a refusal as error_during_execution with exit code 4, and cost null for an unpriced model", async () => {
    const { output, lines } = setup("json", { model: "claude-test", pricing: undefined });
    const { run } = fixture([response([text("I can't help with that.")], "refusal")], {
      events: output.listener(sandboxFacts),
    });
    await run();
    expect(lines()[0]).toMatchObject({
      subtype: "error_during_execution",
      status: "refusal",
      exit_code: 4,
      total_cost_usd: null,
    });
  });
});

describe("createRunOutput: stream-json and secrets", () => {
  it("masks a secret inside a thinking block too: the stream is for reading and nothing sends it back", async () => {
    const { output, lines } = setup("stream-json");
    const thinking = {
      type: "thinking",
      thinking: "Send Authorization: Bearer tok-123, not sk-ant-api03-XyZ.",
      signature: "sig_1",
    } as unknown as Parameters<typeof toolCalls>[0];
    const { run } = fixture([toolCalls(thinking, bash("t1", "ls")), answer("Listed.")], {
      events: output.listener(sandboxFacts),
    });
    await run();
    const assistant = lines().find((line) => line["type"] === "assistant") as {
      message: { content: Array<Record<string, unknown>> };
    };
    expect(assistant.message.content[0]).toEqual({
      type: "thinking",
      thinking: "Send Authorization: [REDACTED], not sk-ant-[REDACTED].",
      signature: "sig_1",
    });
  });
});

describe("createRunOutput: failures before the run", () => {
  it("prints an error result in the JSON formats and rethrows", () => {
    const { output, lines } = setup("stream-json");
    const error = new SandboxError("Docker is not reachable at unix:///nope.sock (ENOENT).");
    expect(() => output.fail(error, 1)).toThrow(error);
    expect(lines()).toEqual([
      expect.objectContaining({
        type: "result",
        subtype: "error_during_execution",
        status: "error",
        is_error: true,
        exit_code: 1,
        num_turns: 0,
        transcript_path: null,
        error: { name: "SandboxError", message: "Docker is not reachable at unix:///nope.sock (ENOENT)." },
      }),
    ]);
  });

  it("prints nothing on stdout in text format", () => {
    const { output, stdout } = setup("text");
    expect(() => output.fail(new SandboxError("no docker"), 1)).toThrow("no docker");
    expect(stdout.text()).toBe("");
  });
});

describe("createRunOutput: API time", () => {
  it("counts the time spent in model calls, and the whole command's time", async () => {
    const { output, lines } = setup("json");
    const model = output.timeModelCalls(new ScriptedModel([answer("ok")]));
    // Every clock read advances 250 ms: the call reads it twice, so it took 250 ms.
    await model.complete({
      system: "",
      messages: [{ role: "user", content: "hi" }],
      tools: [],
      maxTokens: 10,
    });
    const ended: AgentRunResult = {
      status: "submitted",
      messages: [],
      turns: 1,
      usage: usage(),
      finalText: "ok",
    };
    output.listener(sandboxFacts).onRunEnd?.(ended);
    // Reads: start, call start, call end, end: 750 ms after the start.
    expect(lines()[0]).toMatchObject({ duration_api_ms: 250, duration_ms: 750 });
  });
});
