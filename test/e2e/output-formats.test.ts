/**
 * `--output-format text|json|stream-json` through the built CLI, the fake Messages API and the real
 * Docker sandbox, parsed the way a program would (docs/output-formats.md).
 */
import { realpathSync } from "node:fs";
import { join } from "node:path";
import { beforeEach, describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { E2E_KEY, E2E_MODEL, useFakeApi } from "../support/fake-api-fixture.js";
import { textReply, toolUseReply } from "../support/fake-messages-api.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";
import { removesContainerOf } from "../support/workspace-container.js";

type Json = Record<string, unknown>;

const RESULT_FIELDS = [
  "type",
  "subtype",
  "is_error",
  "status",
  "exit_code",
  "result",
  "num_turns",
  "duration_ms",
  "duration_api_ms",
  "usage",
  "total_cost_usd",
  "model",
  "session_id",
  "run_id",
  "transcript_path",
];

function parseLines(stdout: string): Json[] {
  expect(stdout.endsWith("\n")).toBe(true);
  return stdout
    .slice(0, -1)
    .split("\n")
    .map((line) => JSON.parse(line) as Json);
}

describe.skipIf(skipDocker)("harness run --output-format", () => {
  const fake = useFakeApi();
  beforeEach(async () => {
    fake.api.enqueue(
      toolUseReply("bash", { command: "echo hello" }, "Saying hello."),
      toolUseReply("bash", { command: "exit 3" }),
      textReply("Said hello; the second command failed with 3."),
    );
  });

  it("json: exactly one JSON object on stdout, with the documented fields; people read stderr", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    const transcript = join(ws.path, "..", `${ws.path.split("/").pop()}-out.jsonl`);
    const run = await runCli(
      ["run", "--workspace", ws.path, "--output-format", "json", "--transcript", transcript, "say hello"],
      { env: fake.env },
    );
    expect(run.code).toBe(0);
    expect(parseLines(run.stdout)).toHaveLength(1);
    const result = JSON.parse(run.stdout) as Json;
    expect(Object.keys(result)).toEqual(RESULT_FIELDS);
    expect(result).toMatchObject({
      type: "result",
      subtype: "success",
      is_error: false,
      status: "submitted",
      exit_code: 0,
      result: "Said hello; the second command failed with 3.",
      num_turns: 3,
      // Three turns of the fake's 10 input + 5 output tokens, at Sonnet 4.x prices ($3 / $15 per million).
      usage: {
        input_tokens: 30,
        output_tokens: 15,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
      },
      total_cost_usd: 0.000315,
      model: E2E_MODEL,
      transcript_path: transcript,
    });
    expect(result["session_id"]).toBe(result["run_id"]);
    expect(result["duration_ms"]).toBeGreaterThanOrEqual(result["duration_api_ms"] as number);
    expect(result["duration_api_ms"]).toBeGreaterThan(0);
    expect(run.stderr).toContain("$ echo hello");
    expect(run.stderr).toMatch(/submitted · 3 turns .* cost ≈ \$0\.00032/);
  });

  it("stream-json: every line parses, init first, result last, tool results carry exit codes", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    const run = await runCli(["run", "--workspace", ws.path, "--output-format", "stream-json", "say hello"], {
      env: fake.env,
    });
    expect(run.code).toBe(0);
    const lines = parseLines(run.stdout);
    const init = lines[0];
    expect(init).toMatchObject({
      type: "system",
      subtype: "init",
      model: E2E_MODEL,
      workspace: realpathSync(ws.path),
      cwd: "/workspace",
      image: expect.stringMatching(/^harness-sandbox:/),
      network: "none",
      tools: expect.arrayContaining(["bash"]),
      limits: { max_turns: 50, max_tokens: 8000, max_total_tokens: null, max_budget_usd: null },
    });
    const runId = init?.["run_id"];
    expect(lines.every((line) => line["session_id"] === runId)).toBe(true);
    const assistant = lines.filter((line) => line["type"] === "assistant");
    expect(assistant).toHaveLength(3);
    expect(assistant[0]).toMatchObject({
      message: {
        role: "assistant",
        stop_reason: "tool_use",
        content: [
          { type: "text", text: "Saying hello." },
          { type: "tool_use", name: "bash" },
        ],
      },
    });
    const toolResults = lines.filter((line) => line["harness"] !== undefined);
    expect(toolResults.map((line) => (line["harness"] as Json)["exit_code"])).toEqual([0, 3]);
    expect(toolResults[1]).toMatchObject({
      type: "user",
      message: { role: "user", content: [{ type: "tool_result", is_error: true }] },
      harness: { tool_name: "bash", ran: true, timed_out: false, truncated: false },
    });
    const result = lines.at(-1);
    expect(Object.keys(result ?? {})).toEqual(RESULT_FIELDS);
    expect(result).toMatchObject({ type: "result", subtype: "success", exit_code: 0, run_id: runId });
    expect(run.stderr).not.toContain("$ echo hello");
  });

  it("text: output for people, no JSON", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    const run = await runCli(["run", "--workspace", ws.path, "say hello"], { env: fake.env });
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("$ echo hello");
    expect(run.stdout).toMatch(/exit 3/);
    expect(run.stdout).toMatch(/submitted · 3 turns/);
    for (const line of run.stdout.split("\n")) expect(line.trimStart().startsWith("{")).toBe(false);
  });
});

describe("harness run --output-format before the run", () => {
  it("prints an error result when the sandbox cannot start, still only JSON on stdout", async () => {
    using ws = makeWorkspace();
    const run = await runCli(["run", "--workspace", ws.path, "--output-format", "stream-json", "x"], {
      env: { ANTHROPIC_API_KEY: E2E_KEY, MODEL_ID: E2E_MODEL, DOCKER_HOST: "unix:///nonexistent.sock" },
    });
    expect(run.code).toBe(1);
    const lines = parseLines(run.stdout);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      type: "result",
      subtype: "error_during_execution",
      is_error: true,
      status: "error",
      exit_code: 1,
      num_turns: 0,
      total_cost_usd: 0,
      transcript_path: null,
      error: { name: "SandboxError", message: expect.stringMatching(/^Docker is not reachable/) },
    });
    expect(run.stderr).toMatch(/^harness: Docker is not reachable/m);
  });

  it("needs a task: the interactive prompt is text only", async () => {
    using ws = makeWorkspace();
    const run = await runCli(["run", "--workspace", ws.path, "--output-format", "json"], {
      env: { ANTHROPIC_API_KEY: E2E_KEY, MODEL_ID: E2E_MODEL, HARNESS_OUTPUT_FORMAT: "text" },
    });
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(/--output-format json needs a task/);
  });
});
