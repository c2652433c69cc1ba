/**
 * Records examples/hello/transcript.jsonl: the seed tutorial's exercise (create hello.py that prints
 * "Hello, Agent Harness", run it, report) done by the built CLI in an empty temporary workspace, with
 * the fake Messages API playing the model, so no key and no network are needed.
 *
 *   npm run build && node --import tsx scripts/record-example.ts
 */
import { mkdirSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { startFakeMessagesApi, textReply, toolUseReply } from "../test/support/fake-messages-api.js";
import { runCli } from "../test/support/run-cli.js";
import { makeWorkspace } from "../test/support/workspace.js";

const TRANSCRIPT = fileURLToPath(new URL("../examples/hello/transcript.jsonl", import.meta.url));
const KEY = "sk-ant-example-fake-key";
const MODEL = "claude-example-model";
const TASK = 'Create hello.py that prints "Hello, Agent Harness", run it, and tell me its output.';

async function main(): Promise<number> {
  // The transcript appends: start from nothing so the file holds exactly one run.
  rmSync(TRANSCRIPT, { force: true });
  mkdirSync(dirname(TRANSCRIPT), { recursive: true });
  await using api = await startFakeMessagesApi({ apiKey: KEY, models: [MODEL] });
  // Fixed tool_use ids keep re-recordings comparable line by line.
  api.enqueue(
    toolUseReply(
      "bash",
      { command: "printf 'print(\"Hello, Agent Harness\")\\n' > hello.py" },
      "I'll create hello.py.",
      "toolu_hello_01",
    ),
    toolUseReply("bash", { command: "python3 hello.py" }, undefined, "toolu_hello_02"),
    textReply('I created hello.py and ran it with python3; it printed "Hello, Agent Harness".'),
  );
  using ws = makeWorkspace("harness-example-");
  // cwd is the workspace, so no .env of the developer's own is loaded into the run.
  const env = { ANTHROPIC_API_KEY: KEY, MODEL_ID: MODEL, ANTHROPIC_BASE_URL: api.url };
  const run = await runCli(["run", "--workspace", ws.path, "--transcript", TRANSCRIPT, TASK], {
    env,
    cwd: ws.path,
  });
  // The run leaves the workspace's long-lived container behind; this workspace is gone after this.
  await runCli(["rm", "--workspace", ws.path], { env, cwd: ws.path });
  if (run.code !== 0 || api.pending() !== 0) {
    process.stderr.write(`recording failed (exit ${run.code}, ${api.pending()} replies unused)\n`);
    process.stderr.write(`${run.stdout}\n${run.stderr}\n`);
    return 1;
  }
  process.stdout.write(`${run.stdout}recorded ${TRANSCRIPT}\n`);
  return 0;
}

process.exitCode = await main();
