/**
 * Secrets in the transcript against the blocks the API signed, through the real loop, the real
 * Anthropic client, the real transcript writer and reader, and the strict fake (a model with
 * preserved thinking: each thinking block sent back is checked against the conversation before it).
 * A thinking block that mentions an auth header goes back byte for byte on `--continue`; one that
 * holds an API key is never written, and the thinking after it (or after a masked secret) is left
 * out, so the continued run's requests are still accepted; a turn that goes on without its thinking
 * is refused in one line unless thinking is off.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type AgentDeps, runAgent } from "../../../src/agent/loop.js";
import { checkRebuiltConversation } from "../../../src/cli/runs/rebuilt-conversation.js";
import { ConfigError } from "../../../src/errors.js";
import { AnthropicModelClient } from "../../../src/model/anthropic-model-client.js";
import type { MessageParam, ThinkingSetting } from "../../../src/model/model-client.js";
import { createBashTool } from "../../../src/tools/bash-tool.js";
import { parseConversation, type RebuildOptions } from "../../../src/transcript/read-conversation.js";
import { createTranscript } from "../../../src/transcript/transcript.js";
import { type FakeMessagesApi, startFakeMessagesApi, textReply } from "../../support/fake-messages-api.js";
import { FakeSandbox } from "../../support/fake-sandbox.js";

const KEY = "sk-ant-test-key";
const MODEL = "claude-fake-preserving";
const PRINTED_KEY = "sk-ant-api03-AbCdEf0123456789";

let api: FakeMessagesApi;
let dir: string;
let transcriptPath: string;
beforeEach(async () => {
  api = await startFakeMessagesApi({
    apiKey: KEY,
    catalog: { [MODEL]: { contextWindow: 200_000, thinking: { adaptive: true }, preservedThinking: true } },
  });
  dir = mkdtempSync(join(tmpdir(), "harness-signed-blocks-"));
  transcriptPath = join(dir, "run.jsonl");
});
afterEach(async () => {
  await api.close();
  rmSync(dir, { recursive: true, force: true });
});

/** One run (or a continued one) through the real loop, appending to the one transcript. */
async function run(
  task: string,
  options: { history?: MessageParam[]; thinking?: ThinkingSetting; maxTurns?: number; stdout?: string } = {},
) {
  const transcript = createTranscript(transcriptPath);
  const sandbox = new FakeSandbox(() => ({ stdout: options.stdout ?? "ok\n" }));
  const deps: AgentDeps = {
    model: new AnthropicModelClient({ apiKey: KEY, baseURL: api.url, model: MODEL, maxRetries: 0 }),
    tools: [createBashTool(sandbox, { timeoutMs: 5000, anthropic: true })],
    system: "You are a coding agent.",
    limits: { maxTurns: options.maxTurns ?? 20, maxTokens: 8000 },
    events: transcript,
    thinking: options.thinking ?? { type: "adaptive" },
    ...(options.history === undefined ? {} : { history: options.history }),
  };
  try {
    return await runAgent(task, deps);
  } finally {
    transcript.close();
  }
}

const thinkingThen = (thought: string, command: string) => ({
  content: [
    { type: "thinking" as const, thinking: thought },
    { type: "tool_use" as const, name: "bash", input: { command } },
  ],
});
const rebuild = (options: RebuildOptions = {}) =>
  parseConversation(readFileSync(transcriptPath, "utf8"), undefined, options);
const thinkingSent = (index: number): string[] =>
  (api.requests[index]?.body.messages ?? []).flatMap((m) =>
    typeof m.content === "string"
      ? []
      : (m.content ?? []).flatMap((b) => (b.type === "thinking" ? [b.thinking] : [])),
  );

describe("a thinking block that mentions an auth header", () => {
  it("is written verbatim and goes back unchanged on --continue, accepted", async () => {
    const thought = "The API wants an Authorization: Bearer x header; x-api-key: y would do too.";
    api.enqueue(thinkingThen(thought, "curl -s localhost"), textReply("Done."));
    expect((await run("Call the API.")).status).toBe("submitted");
    expect(readFileSync(transcriptPath, "utf8")).toContain(thought);

    const rebuilt = rebuild();
    expect(rebuilt.thinking).toEqual({ leftOut: 0, openTurn: false });
    expect(checkRebuiltConversation(rebuilt, "--continue", "r1", false)).toEqual([]);
    const sent = api.requests.length;
    api.enqueue(textReply("Still done."));
    const more = await run("Anything left?", { history: rebuilt.messages });
    expect(more.error?.message).toBeUndefined();
    expect(more.status).toBe("submitted");
    expect(api.requests[sent]?.status).toBe(200);
    expect(thinkingSent(sent)).toEqual([thought]);
  });
});

describe("a thinking block that holds an Anthropic API key", () => {
  it("is not written; the thinking after it is left out, in one line, and the continued run is accepted", async () => {
    api.enqueue(
      thinkingThen(`The key printed was ${PRINTED_KEY}; I must not use it.`, "env | grep -c KEY"),
      thinkingThen("Now list the files.", "ls"),
      textReply("Done."),
    );
    expect((await run("Look around.")).status).toBe("submitted");
    const written = readFileSync(transcriptPath, "utf8");
    expect(written).not.toContain(PRINTED_KEY);
    expect(written).toContain(
      '{"type":"withheld","block":"thinking","reason":"it held an Anthropic API key"}',
    );
    expect(written).toContain("Now list the files.");

    const rebuilt = rebuild();
    expect(rebuilt.thinking).toMatchObject({ leftOut: 2, because: { why: "withheld" }, openTurn: false });
    const notes = checkRebuiltConversation(rebuilt, "--continue", "r1", false);
    expect(notes).toEqual([
      expect.stringMatching(
        /^left out 2 thinking block\(s\) of run r1: a thinking block at transcript line \d+ held an Anthropic API key and was not recorded, and the API takes thinking back only after the conversation it followed, unchanged$/,
      ),
    ]);
    const sent = api.requests.length;
    api.enqueue(textReply("Still done."));
    const more = await run("Anything left?", { history: rebuilt.messages });
    expect(more.error?.message).toBeUndefined();
    expect(api.requests[sent]?.status).toBe(200);
    expect(thinkingSent(sent)).toEqual([]);
  });

  it("the second block kept would be refused: the fake checks what came before it", async () => {
    api.enqueue(
      thinkingThen(`The key printed was ${PRINTED_KEY}.`, "true"),
      thinkingThen("Now list the files.", "ls"),
      textReply("Done."),
    );
    await run("Look around.");
    // What a rebuild that left out only the withheld block would send.
    const live = rebuild({}).messages;
    const second = (api.requests[2]?.body.messages[3] as MessageParam | undefined)?.content;
    const naive = live.map((m, i) =>
      i === 3 ? { ...m, content: second ?? m.content } : m,
    ) as MessageParam[];
    api.enqueue(textReply("unused"));
    const more = await run("Anything left?", { history: naive });
    expect(more.status).toBe("error");
    expect(more.error?.message).toMatch(/messages\.3\.content\.0: .*bound to a different conversation/);
  });

  it("in the turn a cut-off run was in: refused in one line while thinking is on; with it off the run goes on", async () => {
    api.enqueue(thinkingThen(`Use ${PRINTED_KEY}? No.`, "ls"));
    const cut = await run("Look around.", { maxTurns: 1 });
    expect(cut.status).toBe("step_limit");
    expect(readFileSync(transcriptPath, "utf8")).not.toContain(PRINTED_KEY);

    const rebuilt = rebuild();
    expect(rebuilt.thinking.openTurn).toBe(true);
    let refused: unknown;
    try {
      checkRebuiltConversation(rebuilt, "--continue", "r1", false);
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as Error).message).toMatch(
      /^--continue: run r1 stopped in the middle of a turn whose thinking cannot be sent back \(a thinking block at transcript line \d+ held an Anthropic API key and was not recorded\), and the API refuses a turn's tool results without its thinking while thinking is on: give --thinking off$/,
    );
    // What the refusal saves: that turn sent back without its thinking while thinking is on.
    api.enqueue(textReply("unused"));
    const refusedByApi = await run("Go on.", { history: rebuilt.messages });
    expect(refusedByApi.error?.message).toMatch(/Expected `thinking` or `redacted_thinking`/);

    const off = rebuild({ dropThinking: true });
    expect(() => checkRebuiltConversation(off, "--continue", "r1", true)).not.toThrow();
    const sent = api.requests.length;
    api.enqueue(textReply("Went on."));
    const more = await run("Go on.", { history: off.messages, thinking: { type: "disabled" } });
    expect(more.error?.message).toBeUndefined();
    expect(api.requests[sent]?.status).toBe(200);
  });
});

describe("a secret masked in a tool result", () => {
  it("keeps the thinking before it and leaves out the thinking after it", async () => {
    api.enqueue(
      thinkingThen("Look at the headers.", "curl -v localhost"),
      thinkingThen("The token works.", "ls"),
      textReply("Done."),
    );
    const first = await run("Check the token.", { stdout: "> Authorization: Bearer tok-123456\n< 200\n" });
    expect(first.status).toBe("submitted");
    const written = readFileSync(transcriptPath, "utf8");
    expect(written).not.toContain("tok-123456");
    expect(written).toMatch(/"type":"tool_result".*"masked":true/);

    const rebuilt = rebuild();
    expect(rebuilt.thinking).toMatchObject({ leftOut: 1, because: { why: "masked" }, openTurn: false });
    expect(checkRebuiltConversation(rebuilt, "--continue", "r1", false)[0]).toMatch(
      /^left out 1 thinking block\(s\) of run r1: a secret was masked at transcript line \d+, /,
    );
    const sent = api.requests.length;
    api.enqueue(textReply("Still done."));
    const more = await run("Anything left?", { history: rebuilt.messages });
    expect(more.error?.message).toBeUndefined();
    expect(api.requests[sent]?.status).toBe(200);
    expect(thinkingSent(sent)).toEqual(["Look at the headers."]);
  });
});
