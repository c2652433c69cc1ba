import { describe, expect, it } from "vitest";
import { fixture } from "../../support/agent-fixture.js";
import { FakeSandbox } from "../../support/fake-sandbox.js";
import { sandboxFacts, setupOutput as setup } from "../../support/run-output-fixture.js";
import { answer, bash, toolCalls } from "../../support/scripted-model.js";

describe("createRunOutput: stream-json", () => {
  it("prints init, each user text and turn, each tool result with its exit code, then the result", async () => {
    const { output, lines, stderr } = setup("stream-json");
    const sandbox = new FakeSandbox([{ stdout: "hi sk-ant-api03-secret\n", exitCode: 3, durationMs: 41 }]);
    const { run } = fixture([toolCalls(bash("t1", "echo hi")), answer("All done.")], {
      sandbox,
      events: output.listener(sandboxFacts),
    });
    await run("say hi");
    const all = lines();
    expect(all.map((l) => `${l["type"]}${l["subtype"] ? `/${l["subtype"]}` : ""}`)).toEqual([
      "system/init",
      "user",
      "assistant",
      "user",
      "assistant",
      "result/success",
    ]);
    expect(all[0]).toMatchObject({
      model: "claude-sonnet-4-5",
      workspace: "/home/me/proj",
      cwd: "/workspace",
      image: "harness-sandbox:test",
      network: "none",
      container_id: "c0ffee",
      tools: ["bash"],
      run_id: "run-1",
      session_id: "run-1",
      limits: { max_turns: 10, max_tokens: 1000, max_total_tokens: null, command_timeout_ms: 120_000 },
    });
    expect(all[2]).toMatchObject({
      message: { role: "assistant", stop_reason: "tool_use", content: [{ type: "tool_use", id: "t1" }] },
    });
    const toolResult = all[3] as { message: { content: Array<Record<string, unknown>> }; harness: unknown };
    expect(toolResult.message.content[0]).toMatchObject({
      type: "tool_result",
      tool_use_id: "t1",
      is_error: true,
    });
    expect(toolResult.harness).toEqual({
      tool_name: "bash",
      ran: true,
      exit_code: 3,
      duration_ms: 41,
      timed_out: false,
      canceled: false,
      oom_killed: false,
      truncated: false,
    });
    expect(JSON.stringify(all)).not.toContain("sk-ant-api03-secret");
    expect(all[5]).toMatchObject({
      type: "result",
      subtype: "success",
      is_error: false,
      result: "All done.",
    });
    expect(stderr.text()).toBe("");
  });

  it("prints notices as system lines", async () => {
    const { output, lines } = setup("stream-json");
    const { run } = fixture([toolCalls(bash("t1", "ls"))], {
      limits: { maxTurns: 1 },
      events: output.listener(sandboxFacts),
    });
    await run();
    expect(lines().at(-2)).toEqual({
      type: "system",
      subtype: "notice",
      text: "Stopped: reached the turn limit (1 model calls).",
      session_id: "run-1",
    });
  });
});

describe("createRunOutput: stream-json context edits", () => {
  it("prints a compaction as Claude Code's compact_boundary, cleared results as a context_edit", () => {
    const { output, lines } = setup("stream-json");
    const events = output.listener(sandboxFacts);
    events.onContextEdit?.({
      kind: "compaction",
      by: "server",
      droppedMessages: 12,
      contextTokens: 4000,
      usage: {
        inputTokens: 160_000,
        outputTokens: 900,
        cacheReadInputTokens: 0,
        cacheCreationInputTokens: 0,
      },
    });
    events.onContextEdit?.({
      kind: "summary",
      summary: "Did things.",
      keptMessages: 2,
      tokensBefore: 20_000,
      tokensAfter: 3_000,
      usage: { inputTokens: 9000, outputTokens: 300, cacheReadInputTokens: 0, cacheCreationInputTokens: 0 },
    });
    events.onContextEdit?.({
      kind: "clear_tool_results",
      cleared: [{ toolUseId: "t7", placeholder: "…" }],
      tokensBefore: 9,
      tokensAfter: 5,
    });
    expect(lines()).toEqual([
      expect.objectContaining({
        type: "system",
        subtype: "compact_boundary",
        compact_metadata: { trigger: "auto", strategy: "server", context_tokens: 4000 },
        dropped_messages: 12,
        usage: expect.objectContaining({ input_tokens: 160_000, output_tokens: 900 }),
      }),
      expect.objectContaining({
        subtype: "compact_boundary",
        compact_metadata: { trigger: "auto", strategy: "client", pre_tokens: 20_000 },
        summary: "Did things.",
      }),
      expect.objectContaining({ subtype: "context_edit", edit: "clear_tool_results", tool_use_ids: ["t7"] }),
    ]);
  });
});
