/**
 * A task longer than the context window, through the real loop, the real Anthropic client and the
 * strict fake (which refuses a request over the window with the API's error), the sandbox faked:
 * without context management it stops where the issue saw it stop; with server compaction or with
 * harness's own management it finishes, and no request is ever refused for size. The transcript of
 * such a run rebuilds (for --continue) exactly the conversation the next request would have sent.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { ContextEdit } from "../../../src/agent/context/context-edits.js";
import { type AgentDeps, type ContextOptions, runAgent } from "../../../src/agent/loop.js";
import { AnthropicModelClient } from "../../../src/model/anthropic-model-client.js";
import { createBashTool } from "../../../src/tools/bash-tool.js";
import { createEditorTool } from "../../../src/tools/editor/editor-tool.js";
import { OutputStore } from "../../../src/tools/output-store.js";
import { createReadOutputTool } from "../../../src/tools/read-output-tool.js";
import { parseConversation } from "../../../src/transcript/read-conversation.js";
import { createTranscript } from "../../../src/transcript/transcript.js";
import {
  type FakeMessagesApi,
  type FakeModel,
  startFakeMessagesApi,
  textReply,
} from "../../support/fake-messages-api.js";
import { FakeSandbox } from "../../support/fake-sandbox.js";
import { scriptLongTask, windowFacts } from "../../support/long-task.js";

const KEY = "sk-ant-test-key";
const MODEL = "claude-fake-1";
const SIX_KB = `${"step output line with some text in it ...............................\n".repeat(90)}`;

let api: FakeMessagesApi | undefined;
let dir: string | undefined;
afterEach(async () => {
  await api?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  api = undefined;
  dir = undefined;
});

interface Run {
  deps: AgentDeps;
  edits: ContextEdit[];
  transcriptPath: string;
}

async function longRun(
  model: FakeModel,
  context: Omit<ContextOptions, "window" | "saveCleared"> | undefined,
  options: { charsPerToken?: number; compactionToolChanges?: unknown[] } = {},
): Promise<Run> {
  api = await startFakeMessagesApi({
    apiKey: KEY,
    catalog: { [MODEL]: model },
    ...(options.charsPerToken === undefined ? {} : { charsPerToken: options.charsPerToken }),
    ...(options.compactionToolChanges === undefined
      ? {}
      : { compactionToolChanges: options.compactionToolChanges }),
  });
  dir = mkdtempSync(join(tmpdir(), "harness-long-task-"));
  const sandbox = new FakeSandbox(() => ({ stdout: SIX_KB }));
  const store = new OutputStore({ dir: join(dir, "outputs") });
  const transcriptPath = join(dir, "run.jsonl");
  const transcript = createTranscript(transcriptPath);
  const edits: ContextEdit[] = [];
  const deps: AgentDeps = {
    model: new AnthropicModelClient({ apiKey: KEY, baseURL: api.url, model: MODEL, maxRetries: 0 }),
    tools: [
      createBashTool(sandbox, { timeoutMs: 5000, outputStore: store, anthropic: true }),
      createEditorTool(sandbox, { timeoutMs: 5000 }),
      createReadOutputTool(store),
    ],
    system: "You are a coding agent.",
    limits: { maxTurns: 500, maxTokens: 8000 },
    events: {
      ...transcript,
      onContextEdit: (edit) => {
        transcript.onContextEdit(edit);
        edits.push(edit);
      },
    },
    ...(context === undefined
      ? {}
      : {
          context: {
            ...context,
            window: model.contextWindow,
            saveCleared: (text) => store.saveText(text)?.id,
          },
        }),
  };
  return { deps, edits, transcriptPath };
}

describe("a 40-step task (6 KB a step) under a 24k-token window", () => {
  const small: FakeModel = { contextWindow: 24_000 };

  it("stops at the window without context management, as today", async () => {
    const run = await longRun(small, undefined);
    const script = scriptLongTask(api as FakeMessagesApi, { steps: 40 });
    const result = await runAgent("Run the 40 steps.", run.deps);
    expect(result.status).toBe("context_window");
    expect(script.stepsAsked).toBeLessThan(20);
    expect(windowFacts(api as FakeMessagesApi).refusedForSize).toBe(1);
  });

  it("finishes with client-side management: old results cleared, each pointing at read_output, no request refused", async () => {
    const run = await longRun(small, { strategy: "client" });
    const script = scriptLongTask(api as FakeMessagesApi, { steps: 40 });
    const result = await runAgent("Run the 40 steps.", run.deps);
    expect(result.status).toBe("submitted");
    expect(script.stepsAsked).toBe(40);
    const facts = windowFacts(api as FakeMessagesApi);
    expect(facts.refusedForSize).toBe(0);
    expect(facts.largestInput).toBeLessThanOrEqual(24_000 - 8000);
    const cleared = run.edits.flatMap((e) => (e.kind === "clear_tool_results" ? e.cleared : []));
    expect(cleared.length).toBeGreaterThan(20);
    expect(cleared[0]?.placeholder).toMatch(/read_output \(id "out-\d+"\)/);
    // The cleared text is readable again, whole.
    const id = /id "(out-\d+)"/.exec(cleared[0]?.placeholder ?? "")?.[1] ?? "";
    const reader = run.deps.tools.find((t) => t.definition.name === "read_output");
    const page = await reader?.run(reader.parse({ id, start_line: 1, end_line: 3 }), {});
    expect(page?.content).toMatch(/step output line/);
  });

  it("summarizes when clearing is not enough (200 steps), and still no request is refused", async () => {
    const run = await longRun(small, { strategy: "client" });
    const script = scriptLongTask(api as FakeMessagesApi, { steps: 200 });
    const result = await runAgent("Run the 200 steps.", run.deps);
    expect(result.status).toBe("submitted");
    expect(script.stepsAsked).toBe(200);
    expect(script.summaries).toBeGreaterThan(0);
    expect(run.edits.some((e) => e.kind === "summary")).toBe(true);
    expect(windowFacts(api as FakeMessagesApi).refusedForSize).toBe(0);
    // The summary request's own tokens are counted.
    expect(result.usage.outputTokens).toBeGreaterThan(0);
  }, 60_000);

  it("learns a tokenizer that counts more than harness estimates, before it matters", async () => {
    const run = await longRun(small, { strategy: "client" }, { charsPerToken: 2 });
    scriptLongTask(api as FakeMessagesApi, { steps: 40 });
    const result = await runAgent("Run the 40 steps.", run.deps);
    expect(result.status).toBe("submitted");
    expect(windowFacts(api as FakeMessagesApi).refusedForSize).toBe(0);
  });

  it("ends the run in one line when the last turn alone cannot fit", async () => {
    const run = await longRun(small, { strategy: "client" });
    const fake = api as FakeMessagesApi;
    fake.enqueue({
      content: [
        {
          type: "tool_use",
          name: "str_replace_based_edit_tool",
          input: { command: "create", path: "/workspace/big.txt", file_text: "z".repeat(60_000) },
        },
      ],
    });
    const notices: string[] = [];
    const result = await runAgent("Write a big file.", {
      ...run.deps,
      events: { onNotice: (t) => notices.push(t) },
    });
    expect(result.error?.message).toBeUndefined();
    expect(result.status).toBe("context_window");
    expect(notices.at(-1)).toMatch(
      /^Stopped: the conversation's last turn alone \(about [\d,]+ tokens\) does not fit the model's context window \(24,000 tokens/,
    );
    expect(windowFacts(fake).refusedForSize).toBe(0);
  });
});

describe("a request the API refuses for its size after all", () => {
  it("is fitted again from the API's own count and not sent twice the same", async () => {
    // A tokenizer three times harsher than harness's estimate, and a first request that is already too big.
    const run = await longRun({ contextWindow: 24_000 }, { strategy: "client" }, { charsPerToken: 1 });
    const notices: string[] = [];
    const result = await runAgent("z".repeat(30_000), {
      ...run.deps,
      events: { onNotice: (t) => notices.push(t) },
    });
    const fake = api as FakeMessagesApi;
    expect(windowFacts(fake).refusedForSize).toBe(1);
    expect(fake.requests).toHaveLength(1);
    expect(notices[0]).toMatch(
      /^The API counted [\d,]+ input tokens, more than harness estimated: fitting the conversation again\.$/,
    );
    expect(result.status).toBe("context_window");
    expect(notices.at(-1)).toMatch(/^Stopped: the conversation's last turn alone/);
  });
});

describe("server-side compaction", () => {
  const compacting: FakeModel = { contextWindow: 100_000, compaction: true, thinking: { adaptive: true } };

  it("finishes a task four times the window: the API compacts, harness sends the block back verbatim and drops what it stands for", async () => {
    const run = await longRun(compacting, { strategy: "server" });
    const script = scriptLongTask(api as FakeMessagesApi, { steps: 150, thinking: true });
    const result = await runAgent("Run the 150 steps.", { ...run.deps, thinking: { type: "adaptive" } });
    expect(result.status).toBe("submitted");
    expect(script.stepsAsked).toBe(150);
    const fake = api as FakeMessagesApi;
    const facts = windowFacts(fake);
    expect(facts.refusedForSize).toBe(0);
    expect(facts.compactions).toBeGreaterThanOrEqual(2);
    const compactions = run.edits.filter((e) => e.kind === "compaction");
    expect(compactions).toHaveLength(facts.compactions);
    // After a compaction, each request starts with the assistant message the block opens.
    const after = fake.requests.findIndex((r) => r.compacted) + 1;
    const first = fake.requests[after]?.body.messages[0];
    expect(first?.role).toBe("assistant");
    expect((first?.content as { type: string }[] | undefined)?.[0]?.type).toBe("compaction");
    // Its own tokens are billed.
    expect(compactions[0]?.kind === "compaction" && compactions[0].usage?.inputTokens).toBeGreaterThan(
      50_000,
    );
  }, 60_000);
});

describe("the transcript of a managed run", () => {
  it("rebuilds, for --continue, the conversation the next request would have sent (client)", async () => {
    const run = await longRun({ contextWindow: 24_000 }, { strategy: "client" });
    scriptLongTask(api as FakeMessagesApi, { steps: 120 });
    const result = await runAgent("Run the 120 steps.", run.deps);
    expect(run.edits.some((e) => e.kind === "summary")).toBe(true);
    const rebuilt = parseConversation(readFileSync(run.transcriptPath, "utf8"));
    expect(rebuilt.messages).toEqual(JSON.parse(JSON.stringify(result.messages)));
    expect(rebuilt.highestOutputId).toBeGreaterThan(0);
  }, 60_000);

  it("rebuilds it after server compactions too", async () => {
    const run = await longRun({ contextWindow: 100_000, compaction: true }, { strategy: "server" });
    scriptLongTask(api as FakeMessagesApi, { steps: 100 });
    const result = await runAgent("Run the 100 steps.", run.deps);
    expect(run.edits.some((e) => e.kind === "compaction")).toBe(true);
    const text = readFileSync(run.transcriptPath, "utf8");
    const rebuilt = parseConversation(text);
    expect(rebuilt.messages).toEqual(JSON.parse(JSON.stringify(result.messages)));
    expect(rebuilt.messages[0]?.role).toBe("assistant");
    // --fork at a step after the first compaction starts from its block too; one before it does not.
    const fork = (steps: number) =>
      parseConversation(text, { steps, notRunText: "not in the fork" }).messages[0];
    expect(fork(95)?.role).toBe("assistant");
    expect(fork(5)?.role).toBe("user");
  }, 60_000);

  it("keeps a compaction block's tool_changes verbatim through the transcript, and --continue sends them back accepted", async () => {
    // What a range that changed tools reports; its description reads like an auth header, which the
    // transcript masks anywhere but in a signed block.
    const toolChanges = [
      {
        type: "tool_addition",
        tool: {
          type: "tool_definition",
          definition: {
            name: "call_api",
            description: "Calls the API with Authorization: Bearer x set.",
            input_schema: { type: "object", properties: {} },
          },
        },
      },
      { type: "tool_removal", tool: { type: "tool_reference", name: "read_file" } },
    ];
    const run = await longRun(
      { contextWindow: 100_000, compaction: true },
      { strategy: "server" },
      { compactionToolChanges: toolChanges },
    );
    scriptLongTask(api as FakeMessagesApi, { steps: 60 });
    const result = await runAgent("Run the 60 steps.", run.deps);
    expect(result.status).toBe("submitted");
    const fake = api as FakeMessagesApi;
    expect(windowFacts(fake).compactions).toBeGreaterThanOrEqual(1);
    const rebuilt = parseConversation(readFileSync(run.transcriptPath, "utf8"));
    const block = (
      rebuilt.messages[0]?.content as unknown as Array<Record<string, unknown>> | undefined
    )?.[0];
    expect(block).toMatchObject({ type: "compaction", tool_changes: toolChanges });
    expect(rebuilt.messages).toEqual(JSON.parse(JSON.stringify(result.messages)));
    const sent = fake.requests.length;
    fake.enqueue(textReply("Still done."));
    const more = await runAgent("Anything left?", { ...run.deps, history: rebuilt.messages });
    expect(more.error?.message).toBeUndefined();
    expect(fake.requests[sent]?.status).toBe(200);
  }, 60_000);
});
