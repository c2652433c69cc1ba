import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { E2E_KEY, E2E_MODEL, useFakeApi } from "../support/fake-api-fixture.js";
import { type FakeMessagesApi, textReply, toolUseReply } from "../support/fake-messages-api.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace, TEST_UID } from "../support/workspace.js";

function toolResults(api: FakeMessagesApi, requestIndex: number): Array<Record<string, unknown>> {
  const messages = api.requests[requestIndex]?.body.messages ?? [];
  const last = messages[messages.length - 1];
  return Array.isArray(last?.content) ? (last.content as unknown as Array<Record<string, unknown>>) : [];
}

/** The seed tutorial's exercise, through the built CLI, a real Docker sandbox and the fake Messages API. */
describe.skipIf(skipDocker)("harness run end to end", () => {
  const fake = useFakeApi();

  it("creates hello.py in the workspace, runs it, and reports its real output", async () => {
    using ws = makeWorkspace();
    fake.api.enqueue(
      toolUseReply(
        "bash",
        { command: "printf 'print(\"Hello, Agent Harness\")\\n' > hello.py" },
        "Creating it.",
      ),
      toolUseReply("bash", { command: "python3 hello.py" }),
      textReply("Running hello.py printed: Hello, Agent Harness"),
    );
    const transcriptPath = join(ws.path, "..", `${ws.path.split("/").pop()}-transcript.jsonl`);
    const run = await runCli(
      [
        "run",
        "--workspace",
        ws.path,
        "--transcript",
        transcriptPath,
        "Create hello.py that prints Hello, Agent Harness; run it",
      ],
      { env: fake.env },
    );
    expect(run.stderr).not.toMatch(/at .*\.js:\d+/); // no stack trace
    expect(run.code).toBe(0);
    expect(readFileSync(join(ws.path, "hello.py"), "utf8")).toBe('print("Hello, Agent Harness")\n');
    expect(statSync(join(ws.path, "hello.py")).uid).toBe(TEST_UID);
    expect(fake.api.requests).toHaveLength(3);
    const [result] = toolResults(fake.api, 2);
    expect(result?.["type"]).toBe("tool_result");
    expect(result?.["is_error"]).not.toBe(true);
    expect(JSON.stringify(result?.["content"])).toContain("Hello, Agent Harness");
    expect(run.stdout).toContain("$ python3 hello.py");
    expect(run.stdout).toContain("Running hello.py printed: Hello, Agent Harness");
    expect(run.stdout).toMatch(/submitted/);
    const records = readFileSync(transcriptPath, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(records.some((r) => r.type === "tool_result")).toBe(true);
    expect(readFileSync(transcriptPath, "utf8")).not.toContain(E2E_KEY);
  });

  it("tells the model a failed command's exit code and stderr, marked as an error", async () => {
    using ws = makeWorkspace();
    fake.api.enqueue(
      toolUseReply("bash", { command: "python3 -c 'import sys; sys.exit(\"boom\")'" }),
      textReply("It failed."),
    );
    const run = await runCli(["run", "--workspace", ws.path, "run it"], {
      env: fake.env,
    });
    expect(run.code).toBe(0);
    const [result] = toolResults(fake.api, 1);
    expect(result).toMatchObject({ is_error: true });
    const text = JSON.stringify(result?.["content"]);
    expect(text).toContain("boom");
    expect(text).toContain("<exit_code>1</exit_code>");
  });

  it("keeps the whole output of a cut command for the read_output tool", async () => {
    using ws = makeWorkspace();
    fake.api.enqueue(
      toolUseReply("bash", { command: "seq 1 200000; echo 'FAIL: needle' >&2" }),
      (request) => {
        const results = JSON.stringify(request.body.messages.at(-1)?.content);
        const id = /saved as (out-\d+)/.exec(results)?.[1] ?? "missing";
        return toolUseReply("read_output", { id, grep: "^1234[0-9]$" });
      },
      textReply("Found it."),
    );
    const run = await runCli(["run", "--workspace", ws.path, "find it"], {
      env: fake.env,
    });
    expect(run.code).toBe(0);
    const [cut] = toolResults(fake.api, 1);
    expect(JSON.stringify(cut?.["content"])).toMatch(/saved as out-1/);
    const [read] = toolResults(fake.api, 2);
    const text = JSON.stringify(read?.["content"]);
    expect(text).toContain("out-1 stdout: 10 matching line(s) of 200000.");
    expect(text).toContain("12345: 12345");
  });

  it("without a task, keeps the conversation across prompts until exit", async () => {
    using ws = makeWorkspace();
    fake.api.enqueue(textReply("First answer."), textReply("Second answer."));
    const run = await runCli(["run", "--workspace", ws.path], {
      env: fake.env,
      input: "first question\nsecond question\nexit\nnever sent\n",
    });
    expect(run.code).toBe(0);
    expect(fake.api.requests).toHaveLength(2);
    const second = fake.api.requests[1]?.body.messages ?? [];
    expect(second.map((m) => m.role)).toEqual(["user", "assistant", "user"]);
    expect(JSON.stringify(second)).toContain("first question");
    expect(JSON.stringify(second[2])).toContain("second question");
    expect(run.stdout).toContain("Second answer.");
  });

  it("ends with one clear line and exit 1 when the key is rejected", async () => {
    using ws = makeWorkspace();
    const run = await runCli(["run", "--workspace", ws.path, "anything"], {
      env: { ANTHROPIC_API_KEY: "sk-ant-wrong", MODEL_ID: E2E_MODEL, ANTHROPIC_BASE_URL: fake.api.url },
    });
    expect(run.code).toBe(1);
    expect(run.stdout + run.stderr).toMatch(/API key was rejected \(401\)/);
    expect(run.stderr).not.toMatch(/at .*\.js:\d+/);
  });

  it("says which setting is missing, and where to put it, before touching Docker", async () => {
    using ws = makeWorkspace();
    const noKey = await runCli(["run", "--workspace", ws.path, "anything"], { env: { MODEL_ID: E2E_MODEL } });
    expect(noKey.code).toBe(2);
    expect(noKey.stderr).toMatch(/^harness: ANTHROPIC_API_KEY is not set: put .* \.env/m);
    const noModel = await runCli(["run", "--workspace", ws.path, "anything"], {
      env: { ANTHROPIC_API_KEY: E2E_KEY },
    });
    expect(noModel.code).toBe(2);
    expect(noModel.stderr).toMatch(/MODEL_ID/);
  });
});
