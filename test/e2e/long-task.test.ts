/**
 * A task longer than the model's context window, through the built CLI, a real sandbox and the strict
 * fake Messages API (it serves the Models API and refuses a request over the window as the API
 * does): with the API's compaction, and with harness's own management where the model has none, the
 * run finishes and no request is refused for size; without management it stops as it always did.
 * The compacted run's transcript replays (editor calls included) and continues.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import {
  type FakeMessagesApi,
  type FakeModel,
  startFakeMessagesApi,
  textReply,
} from "../support/fake-messages-api.js";
import { scriptLongTask, windowFacts } from "../support/long-task.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";

const KEY = "sk-ant-e2e-long-task";
const COMPACTING = "claude-fake-compacting";
const PLAIN = "claude-fake-plain";
const CATALOG: Record<string, FakeModel> = {
  [COMPACTING]: { contextWindow: 100_000, compaction: true, thinking: { adaptive: true } },
  [PLAIN]: { contextWindow: 24_000 },
};

let api: FakeMessagesApi;
let stateHome: string;
beforeEach(async () => {
  api = await startFakeMessagesApi({ apiKey: KEY, catalog: CATALOG });
  stateHome = mkdtempSync(join(tmpdir(), "harness-long-task-state-"));
});
afterEach(async () => {
  await api.close();
  rmSync(stateHome, { recursive: true, force: true });
});

const env = (model: string) => ({
  ANTHROPIC_API_KEY: KEY,
  MODEL_ID: model,
  ANTHROPIC_BASE_URL: api.url,
  XDG_STATE_HOME: stateHome,
});
type Row = Record<string, unknown> & { type: string };
const rows = (path: string): Row[] =>
  readFileSync(path, "utf8")
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Row);
const transcriptOf = (): string => {
  const dir = join(stateHome, "harness", "runs");
  const [name] = readdirSync(dir).filter((n) => n.endsWith(".jsonl"));
  return join(dir, name ?? "");
};

describe("settings refused before the sandbox when the Models API says the model lacks them", () => {
  it("--thinking adaptive and --effort on a model without them: one line, exit 2", async () => {
    using ws = makeWorkspace();
    const thinking = await runCli(["run", "-w", ws.path, "--thinking", "adaptive", "x"], { env: env(PLAIN) });
    expect(thinking.code).toBe(2);
    expect(thinking.stderr.trim()).toBe(
      `harness: --thinking adaptive: the Models API says ${PLAIN} does not support adaptive thinking`,
    );
    const effort = await runCli(["run", "-w", ws.path, "--effort", "high", "x"], { env: env(COMPACTING) });
    expect(effort.code).toBe(2);
    expect(effort.stderr).toMatch(
      /^harness: --effort high: the Models API says claude-fake-compacting does not support effort$/m,
    );
    expect(api.requests.filter((r) => r.path.startsWith("/v1/messages"))).toHaveLength(0);
  });
});

describe.skipIf(skipDocker)("a task longer than the window, end to end", { timeout: 600_000 }, () => {
  it("finishes with server compaction; replay reproduces every call; --continue sends the compacted conversation", async () => {
    using ws = makeWorkspace();
    const script = scriptLongTask(api, { steps: 70, edits: true, thinking: true });
    const run = await runCli(
      [
        "run",
        "-w",
        ws.path,
        "--max-turns",
        "200",
        "--thinking",
        "adaptive",
        "--no-checkpoints",
        "Run the long task.",
      ],
      { env: env(COMPACTING), timeoutMs: 540_000 },
    );
    expect(run.stderr).not.toMatch(/at .*\.js:\d+/);
    expect(run.code).toBe(0);
    expect(script.stepsAsked).toBe(70);
    const facts = windowFacts(api);
    expect(facts.refusedForSize).toBe(0);
    expect(facts.compactions).toBeGreaterThanOrEqual(1);
    // The Anthropic-defined tools, declared by type.
    expect(api.requests.at(-1)?.body.tools?.map((t) => ("type" in t ? t.type : "custom"))).toEqual([
      "bash_20250124",
      "text_editor_20250728",
      "custom",
      "custom",
    ]);
    expect(readFileSync(join(ws.path, "notes.txt"), "utf8")).toBe("steps done: 70\n");

    const transcript = transcriptOf();
    const records = rows(transcript);
    expect(records.some((r) => r.type === "context" && r["kind"] === "compaction")).toBe(true);
    const compacted = records.find(
      (r) => r.type === "assistant" && (r["content"] as { type: string }[])[0]?.type === "compaction",
    );
    expect(compacted).toBeDefined();
    // Thinking kept whole, with its signature.
    const thought = records
      .flatMap((r) => (r.type === "assistant" ? (r["content"] as Record<string, unknown>[]) : []))
      .find((b) => b["type"] === "thinking");
    expect(thought).toMatchObject({
      thinking: expect.stringMatching(/^Step \d+ next\.$/),
      signature: expect.stringMatching(/^sig_/),
    });
    expect(records.find((r) => r.type === "run_start")?.["context"]).toEqual({
      window: 100_000,
      strategy: "server",
    });

    const replay = await runCli(["replay", transcript], {
      env: { XDG_STATE_HOME: stateHome },
      timeoutMs: 300_000,
    });
    expect(replay.stdout).toMatch(/^reproduced: 70 of 70 replayed calls matched/m);
    expect(replay.code).toBe(0);

    const sent = api.requests.length;
    api.enqueue(textReply("Still done."));
    const more = await runCli(["run", "-w", ws.path, "--continue", "--no-checkpoints", "Anything left?"], {
      env: env(COMPACTING),
      cwd: ws.path,
    });
    expect(more.code).toBe(0);
    const first = api.requests[sent]?.body.messages[0];
    expect(first?.role).toBe("assistant");
    expect((first?.content as { type: string }[] | undefined)?.[0]?.type).toBe("compaction");
    expect(api.requests[sent]?.status).toBe(200);
  });

  it("finishes under a 24k window where the model has no compaction (client-side), in stream-json", async () => {
    using ws = makeWorkspace();
    const script = scriptLongTask(api, { steps: 40 });
    const run = await runCli(
      ["run", "-w", ws.path, "--output-format", "stream-json", "--no-checkpoints", "Run the 40 steps."],
      { env: env(PLAIN), timeoutMs: 540_000 },
    );
    expect(run.code).toBe(0);
    expect(script.stepsAsked).toBe(40);
    expect(windowFacts(api).refusedForSize).toBe(0);
    const lines = run.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Row);
    const edits = lines.filter((l) => l.type === "system" && l["subtype"] === "context_edit");
    expect(edits.length).toBeGreaterThan(0);
    expect(lines.at(-1)).toMatchObject({ type: "result", status: "submitted" });
    const records = rows(transcriptOf());
    expect(records.find((r) => r.type === "run_start")?.["context"]).toEqual({
      window: 24_000,
      strategy: "client",
    });
  });

  it("stops at the window as before with --context-management off (exit 4)", async () => {
    using ws = makeWorkspace();
    const script = scriptLongTask(api, { steps: 40 });
    const run = await runCli(
      ["run", "-w", ws.path, "--context-management", "off", "--no-checkpoints", "Run the 40 steps."],
      { env: env(PLAIN), timeoutMs: 540_000 },
    );
    expect(run.code).toBe(4);
    expect(script.stepsAsked).toBeLessThan(40);
    expect(run.stdout).toMatch(/context_window/);
  });
});
