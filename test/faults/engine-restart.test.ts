/**
 * The Docker engine going away mid-call (a crash, `kill -9`, `systemctl restart docker`, an upgrade):
 * `harness run` must end that call with one line and exit 1 (never a stack trace, never a hang), keep
 * its transcript whole with the open call answered, and once the engine is back `run --continue` and
 * `exec` carry on in the same workspace, its files untouched. The engine is a second one the test
 * starts itself (support/second-engine.ts), never the machine's, with the minimal sandbox image
 * loaded into it once for the file.
 */
import {
  chownSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ensureSandboxImage } from "../../src/sandbox/docker/container/image.js";
import { LABEL_WORKSPACE } from "../../src/sandbox/docker/container/labels.js";
import { connectDocker } from "../../src/sandbox/docker/engine/docker-client.js";
import { dockerRequired, hasDocker } from "../support/docker-available.js";
import { useFakeApi } from "../support/fake-api-fixture.js";
import { textReply, toolUseReply } from "../support/fake-messages-api.js";
import { runCli, spawnCli } from "../support/run-cli.js";
import { canStartEngine, type SecondEngine, secondEngine } from "../support/second-engine.js";
import { makeWorkspace, TEST_GID, TEST_UID } from "../support/workspace.js";

/** Locally, a machine that cannot start an engine skips; in CI it fails in beforeAll instead. */
const skip = !dockerRequired() && !(hasDocker && canStartEngine());

let engine: SecondEngine | undefined;
let image = "";
let stateHome: string;

beforeAll(async () => {
  if (skip) return;
  // Minimal: the machinery and little else (tens of MB); the default image's gigabytes would be
  // copied into the engine on every run of this file.
  image = await ensureSandboxImage(await connectDocker(), undefined, undefined, "minimal");
  if (!canStartEngine())
    throw new Error("this test must start a Docker engine of its own: it needs root, dockerd and docker");
  engine = secondEngine();
  await engine.start();
  await engine.loadImage(image);
});

afterAll(async () => {
  await engine?.remove();
});

beforeEach(() => {
  stateHome = mkdtempSync(join(tmpdir(), "harness-fault-engine-state-"));
});
afterEach(async () => {
  // A case that failed half-way may have left the engine down: the next case starts from a running one.
  await engine?.start();
  rmSync(stateHome, { recursive: true, force: true });
});

/** Resolves once `path` exists (the sandbox's command has started); no deadline of its own. */
async function appears(path: string): Promise<void> {
  while (!existsSync(path)) await new Promise((resolve) => setTimeout(resolve, 100));
}

/** Every line of the transcript parsed: a torn or half-written line throws. */
function transcriptRecords(path: string): { type: string; [key: string]: unknown }[] {
  const text = readFileSync(path, "utf8");
  expect(text.endsWith("\n")).toBe(true);
  return text
    .trimEnd()
    .split("\n")
    .map((line) => JSON.parse(line) as { type: string });
}

/** The workspace's containers on `engine` (by harness's label), with their state. */
async function workspaceContainers(
  engine: SecondEngine,
  workspace: string,
): Promise<{ id: string; state: string }[]> {
  const label = [`${LABEL_WORKSPACE}=${realpathSync(workspace)}`];
  const found = await engine.docker.listContainers({ all: true, filters: { label } });
  return found.map((c) => ({ id: c.Id, state: c.State }));
}

function writeOwned(path: string, text: string): void {
  writeFileSync(path, text);
  if (process.getuid?.() === 0) chownSync(path, TEST_UID, TEST_GID);
}

describe.skipIf(skip)("the Docker engine going away mid-call", () => {
  const fake = useFakeApi();

  it.each([
    ["killed (SIGKILL)", "SIGKILL"],
    ["stopped cleanly (SIGTERM, as systemctl restart does)", "SIGTERM"],
  ] as const)(
    "engine %s: one line, exit 1, the transcript whole; --continue and exec carry on once it is back",
    async (_how, signal) => {
      const running = engine;
      if (!running) throw new Error("no engine");
      using ws = makeWorkspace();
      writeOwned(join(ws.path, "keep.txt"), "kept\n");
      const env = { ...fake.env, XDG_STATE_HOME: stateHome, DOCKER_HOST: running.host, HARNESS_IMAGE: image };

      // The call blocks until a file appears that nobody writes: only the engine's end can end it.
      fake.api.enqueue(
        toolUseReply(
          "bash",
          { command: "touch started; while [ ! -e never ]; do sleep 1; done" },
          "Working.",
          "toolu_blocked",
        ),
      );
      const run = spawnCli(["run", "--workspace", ws.path, "a long task"], { env, timeoutMs: 300_000 });
      await appears(join(ws.path, "started"));
      const [before] = (await workspaceContainers(running, ws.path)).map((c) => c.id);
      await running.kill(signal);
      const ended = await run.done;

      // Exit 1 (an error: Docker), and the run's end says why in one line, as for any sandbox failure;
      // stderr has nothing but where the transcript is: no second error, no "internal error", no stack.
      const said = `${ended.stdout}\n${ended.stderr}`;
      expect(ended.code, said).toBe(1);
      const last = ended.stdout.trimEnd().split("\n").at(-1) ?? "";
      expect(last, said).toMatch(
        /^Error: the Docker engine went away \(connect E[A-Z]+ .*docker\.sock\) while /,
      );
      expect(ended.stderr.trimEnd().split("\n"), said).toEqual([
        expect.stringMatching(/^harness: transcript: /),
      ]);
      expect(said).not.toMatch(/^\s+at /m);

      const transcript = /harness: transcript: (.*)/.exec(ended.stderr)?.[1] ?? "";
      const records = transcriptRecords(transcript);
      const result = records.find((r) => r.type === "tool_result") as { content?: string } | undefined;
      expect(result, JSON.stringify(records.map((r) => r.type))).toMatchObject({
        id: "toolu_blocked",
        isError: true,
        content: expect.stringMatching(/^Error: the Docker engine went away/),
      });
      expect(records.at(-1)).toMatchObject({
        type: "run_end",
        status: "error",
        error: { name: "SandboxError", message: expect.stringMatching(/^the Docker engine went away/) },
      });

      // While the engine is still away, the next command says so in one line and leaves the run as it was.
      const early = await runCli(["run", "--continue", "go on"], { env, cwd: ws.path, timeoutMs: 300_000 });
      expect(early.code, early.stderr).toBe(1);
      expect(early.stderr).toMatch(
        /^harness: Docker is not reachable at unix:\/\/.*docker\.sock from DOCKER_HOST/m,
      );
      expect(early.stderr).not.toMatch(/internal error|^\s+at /m);
      expect(readFileSync(transcript, "utf8").trimEnd().split("\n")).toHaveLength(records.length);

      // The engine is back: the run goes on in the same workspace, its container started or made again.
      await running.start();
      fake.api.enqueue(
        toolUseReply("bash", { command: "cat keep.txt; echo after > after.txt" }, "Again.", "toolu_next"),
      );
      fake.api.enqueue(textReply("Done."));
      const next = await runCli(["run", "--continue", "go on"], { env, cwd: ws.path, timeoutMs: 300_000 });
      expect(next.code, next.stderr).toBe(0);
      expect(fake.api.pending()).toBe(0);
      const continued = JSON.stringify(fake.api.requests.at(-1)?.body.messages ?? []);
      expect(continued).toContain("kept");
      expect(readFileSync(join(ws.path, "keep.txt"), "utf8")).toBe("kept\n");
      expect(readFileSync(join(ws.path, "after.txt"), "utf8")).toBe("after\n");
      const whole = transcriptRecords(transcript);
      expect(whole.filter((r) => r.type === "run_start")).toHaveLength(2);
      expect(whole.at(-1)).toMatchObject({ type: "run_end", status: "submitted" });
      // The same container, started again (the engine stopped it when it went or when it came back).
      expect(await workspaceContainers(running, ws.path)).toEqual([{ id: before, state: "running" }]);

      const exec = await runCli(["exec", "-w", ws.path, "--", "cat keep.txt after.txt"], {
        env,
        timeoutMs: 300_000,
      });
      expect(exec.code, exec.stderr).toBe(0);
      expect(exec.stdout).toBe("kept\nafter\n");
      // Nothing in the workspace but what the commands wrote: the engine's going away touched nothing.
      expect(readdirSync(ws.path).sort()).toEqual(["after.txt", "keep.txt", "started"]);
    },
  );

  it("`harness exec` whose engine is killed mid-command: one line, exit 1; the next exec runs", async () => {
    const running = engine;
    if (!running) throw new Error("no engine");
    using ws = makeWorkspace();
    writeOwned(join(ws.path, "keep.txt"), "kept\n");
    const env = { XDG_STATE_HOME: stateHome, DOCKER_HOST: running.host, HARNESS_IMAGE: image };
    const blocked = spawnCli(
      ["exec", "-w", ws.path, "--", "touch started; while [ ! -e never ]; do sleep 1; done"],
      { env, timeoutMs: 300_000 },
    );
    await appears(join(ws.path, "started"));
    await running.kill("SIGKILL");
    const ended = await blocked.done;
    expect(ended.code, ended.stderr).toBe(1);
    expect(ended.stderr.trimEnd().split("\n"), ended.stderr).toEqual([
      expect.stringMatching(
        /^harness: the Docker engine went away \(connect ECONNREFUSED .*docker\.sock\) while /,
      ),
    ]);

    await running.start();
    const next = await runCli(["exec", "-w", ws.path, "--", "cat keep.txt"], { env, timeoutMs: 300_000 });
    expect(next.code, next.stderr).toBe(0);
    expect(next.stdout).toBe("kept\n");
    expect(readdirSync(ws.path).sort()).toEqual(["keep.txt", "started"]);
  });
});
