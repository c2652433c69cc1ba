/**
 * `harness run` (the built CLI) against the fake Messages API on 127.0.0.1, timed from spawn to the
 * request that carries the first tool_result; shared by exec-bench and engines-bench.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type Docker from "dockerode";
import { E2E_KEY, E2E_MODEL } from "../test/support/fake-api-fixture.js";
import {
  type RecordedRequest,
  startFakeMessagesApi,
  textReply,
  toolUseReply,
} from "../test/support/fake-messages-api.js";
import { runProcess } from "./stats.js";
import { acquiredBy, containerOf } from "./workspace-containers.js";

const ROOT = dirname(dirname(fileURLToPath(import.meta.url)));
const CLI = join(ROOT, "bin", "harness.mjs");

/** The engine a run goes to (bench/engine-targets.ts's EngineTarget is one). */
export interface RunTarget {
  name: string;
  /** DOCKER_HOST (and TLS settings) for the CLI child. */
  env: Record<string, string>;
  /** `--runtime` for the CLI. */
  runtime?: string;
  /** A client on this engine, to see which container the run used. */
  docker: Docker;
}

/**
 * One `harness run` whose model calls bash `true` once, then ends: ms from spawn to the tool_result,
 * and how the run got its container. Throws with `who` in front of the message when it fails.
 */
export async function timeFirstToolResult(
  target: RunTarget,
  workspace: string,
  state: string,
  who: string,
): Promise<{ ms: number; acquired: string }> {
  const fail = (what: string): never => {
    throw new Error(`${who}: ${what}`);
  };
  await using api = await startFakeMessagesApi({ apiKey: E2E_KEY, models: [E2E_MODEL] });
  let arrived = Number.NaN;
  api.enqueue(toolUseReply("bash", { command: "true" }), (request: RecordedRequest) => {
    arrived = performance.now();
    const last = request.body.messages.at(-1);
    const block = Array.isArray(last?.content) ? last.content[0] : undefined;
    if (block?.type !== "tool_result" || block.is_error === true)
      fail(`${target.name}: the second request has no successful tool_result: ${JSON.stringify(block)}`);
    return textReply("Done.");
  });
  const args = ["run", "--workspace", workspace, "--network", "none"];
  if (target.runtime) args.push("--runtime", target.runtime);
  const before = await containerOf(target.docker, workspace);
  const started = performance.now();
  const run = await runProcess(process.execPath, [CLI, ...args, "run true"], {
    cwd: ROOT,
    env: {
      PATH: process.env["PATH"] ?? "",
      HOME: process.env["HOME"] ?? "/root",
      NO_COLOR: "1",
      XDG_STATE_HOME: state,
      ANTHROPIC_API_KEY: E2E_KEY,
      MODEL_ID: E2E_MODEL,
      ANTHROPIC_BASE_URL: api.url,
      ...target.env,
    },
  });
  // Copy isolation removes its container when the run ends: the one it used is gone by now.
  const after = await containerOf(target.docker, workspace);
  if (run.code !== 0 || Number.isNaN(arrived))
    fail(
      `${target.name}: harness run exited ${run.code}: ${run.stderr.trim().split("\n").slice(-3).join(" | ")}`,
    );
  return { ms: arrived - started, acquired: after === "none" ? "created" : acquiredBy(before, after) };
}
