/**
 * The exit-code contract (README "Exit codes", src/cli/exit-codes.ts), each code caused for real:
 * the built CLI, the fake Messages API and, where the run reaches it, the real Docker sandbox.
 */
import { describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { E2E_KEY, E2E_MODEL, useFakeApi } from "../support/fake-api-fixture.js";
import { textReply, toolUseReply } from "../support/fake-messages-api.js";
import { runCli, spawnCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";
import { removesContainerOf, workspaceProcesses } from "../support/workspace-container.js";

const NO_STACK = /at .*\.js:\d+/;

describe("exit codes decided before the sandbox", () => {
  it("2: no API key", async () => {
    using ws = makeWorkspace();
    const run = await runCli(["run", "--workspace", ws.path, "anything"], { env: { MODEL_ID: E2E_MODEL } });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^harness: ANTHROPIC_API_KEY is not set/m);
  });

  it("2: a bad flag value, and an unknown flag", async () => {
    using ws = makeWorkspace();
    const env = { ANTHROPIC_API_KEY: E2E_KEY, MODEL_ID: E2E_MODEL };
    const badValue = await runCli(["run", "--workspace", ws.path, "--max-turns", "many", "x"], {
      env,
    });
    expect(badValue.code).toBe(2);
    expect(badValue.stderr).toMatch(/--max-turns must be a positive whole number, got 'many'/);
    const badFormat = await runCli(["run", "--workspace", ws.path, "--output-format", "xml", "x"], {
      env,
    });
    expect(badFormat.code).toBe(2);
    expect(badFormat.stderr).toMatch(/--output-format must be text, json, stream-json/);
    const unknown = await runCli(["run", "--workspace", ws.path, "--no-such-flag", "x"], { env });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown option '--no-such-flag'/);
  });

  it("2: a workspace that does not exist", async () => {
    const run = await runCli(["run", "--workspace", "/nonexistent/harness-ws", "anything"], {
      env: { ANTHROPIC_API_KEY: E2E_KEY, MODEL_ID: E2E_MODEL },
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/workspace '\/nonexistent\/harness-ws' does not exist/);
  });

  it("2: a budget for a model without prices, naming the env vars that price it", async () => {
    using ws = makeWorkspace();
    const run = await runCli(["run", "--workspace", ws.path, "--max-budget-usd", "1", "anything"], {
      env: { ANTHROPIC_API_KEY: E2E_KEY, MODEL_ID: "claude-unpriced-test-model" },
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--max-budget-usd needs prices.*HARNESS_PRICE_INPUT/);
  });

  it("1: Docker unreachable", async () => {
    using ws = makeWorkspace();
    const run = await runCli(["run", "--workspace", ws.path, "anything"], {
      env: { ANTHROPIC_API_KEY: E2E_KEY, MODEL_ID: E2E_MODEL, DOCKER_HOST: "unix:///nonexistent.sock" },
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^harness: Docker is not reachable at unix:\/\/\/nonexistent\.sock/m);
    expect(run.stderr).not.toMatch(NO_STACK);
  });
});

describe.skipIf(skipDocker)("exit codes of runs", () => {
  const fake = useFakeApi();

  it("0: the model ended its turn", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    fake.api.enqueue(toolUseReply("bash", { command: "true" }), textReply("Done."));
    const run = await runCli(["run", "--workspace", ws.path, "do it"], { env: fake.env });
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/submitted · 2 turns/);
  });

  it("1: the API key was rejected (401)", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    const run = await runCli(["run", "--workspace", ws.path, "do it"], {
      env: { ...fake.env, ANTHROPIC_API_KEY: "sk-ant-wrong" },
    });
    expect(run.code).toBe(1);
    expect(run.stdout + run.stderr).toMatch(/API key was rejected \(401\)/);
  });

  it("3: the turn limit, with a model that keeps calling tools", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    fake.api.enqueue(
      toolUseReply("bash", { command: "echo 1" }),
      toolUseReply("bash", { command: "echo 2" }),
    );
    const run = await runCli(["run", "--workspace", ws.path, "--max-turns", "1", "loop"], { env: fake.env });
    expect(run.code).toBe(3);
    expect(fake.api.requests).toHaveLength(1);
    expect(run.stdout).toMatch(/reached the turn limit \(1 model calls\)/);
    expect(run.stdout).toMatch(/step_limit · 1 turn/);
  });

  it("3: the USD budget, priced from HARNESS_PRICE_*", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    fake.api.enqueue(
      toolUseReply("bash", { command: "echo 1" }),
      toolUseReply("bash", { command: "echo 2" }),
    );
    // The fake's turn is 10 input + 5 output tokens: $0.000105 at $3 / $15 per million.
    const priced = { ...fake.env, HARNESS_PRICE_INPUT: "3", HARNESS_PRICE_OUTPUT: "15" };
    const run = await runCli(["run", "--workspace", ws.path, "--max-budget-usd", "0.0001", "loop"], {
      env: priced,
    });
    expect(run.code).toBe(3);
    expect(fake.api.requests).toHaveLength(1);
    expect(run.stdout).toMatch(/cost budget used up \(about \$0\.000105 of \$0\.0001\)/);
    expect(run.stdout).toMatch(/cost_limit · 1 turn · .* · cost ≈ \$0\.00011/);
  });

  it("4: the model refused", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    fake.api.enqueue(textReply("I can't help with that.", { stopReason: "refusal" }));
    const run = await runCli(["run", "--workspace", ws.path, "something bad"], { env: fake.env });
    expect(run.code).toBe(4);
    expect(run.stdout).toMatch(/declined to continue/);
  });

  it("130: Ctrl-C while a command runs kills it in the container", async () => {
    using ws = makeWorkspace();
    await using _container = removesContainerOf(ws.path);
    fake.api.enqueue(toolUseReply("bash", { command: "sleep 600" }));
    const cli = spawnCli(["run", "--workspace", ws.path, "wait a long time"], { env: fake.env });
    await cli.waitForStdout(/\$ sleep 600/);
    // The command is printed just before it starts: wait until it really runs in the container.
    await expect.poll(() => sleeping(ws.path), { timeout: 30_000, interval: 200 }).toBe(true);
    cli.child.kill("SIGINT");
    const run = await cli.done;
    expect(run.code).toBe(130);
    expect(run.stderr).toMatch(/interrupted: stopping the running command/);
    expect(await sleeping(ws.path)).toBe(false);
  });
});

async function sleeping(workspace: string): Promise<boolean> {
  return (await workspaceProcesses(workspace)).some((line) => /\bsleep 600\b/.test(line));
}
