/**
 * Every way a `harness run` session can end runs the end of the session (src/cli/session/), in a
 * run with a task and at the interactive prompt: the model's call plants a nested repository whose
 * config the owner's `git status` would run and leaves a background job; the session is ended one
 * way or another; the host sees the repository moved aside, `git status` running nothing, nothing of
 * the run left in the container, run_end recorded with what ended it, and a meaningful exit code.
 */
import { spawn } from "node:child_process";
import { openSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { useFakeApi } from "../support/fake-api-fixture.js";
import { textReply, toolUseReply } from "../support/fake-messages-api.js";
import { CLI_PATH, type CliOptions, spawnCli } from "../support/run-cli.js";
import {
  CRASH_ON_SIGUSR2,
  expectSessionEnded,
  plantAndWait,
  plantCommand,
  RUNNING_COMMAND,
  sessionWorkspace,
  transcriptRecords,
  untilPlanted,
} from "../support/session-end-fixture.js";

describe.skipIf(skipDocker)("the end of a harness run session", { timeout: 300_000 }, () => {
  const fake = useFakeApi();

  /** `harness run` on `ws` with the fake model; the task given unless `task` is undefined (the prompt). */
  function startRun(
    ws: { path: string; transcript: string },
    task: string | undefined,
    extra: string[] = [],
    options: CliOptions = {},
  ) {
    const args = ["run", "--workspace", ws.path, "--transcript", ws.transcript, "--timeout", "600", ...extra];
    return spawnCli(task === undefined ? args : [...args, task], {
      timeoutMs: 240_000,
      ...options,
      env: { ...fake.env, ...options.env },
    });
  }

  it.each([
    ["SIGTERM", 143],
    ["SIGHUP", 129],
  ] as const)(
    "%s while a command runs: the command is stopped and the session ends, exit %d",
    async (signal, code) => {
      await using ws = sessionWorkspace();
      fake.api.enqueue(toolUseReply("bash", { command: plantAndWait(ws.path) }), textReply("done"));
      const cli = startRun(ws, "plant");
      await untilPlanted(ws.path, cli);
      cli.child.kill(signal);
      const run = await cli.done;
      await expectSessionEnded(ws.path, { transcript: ws.transcript, endedBy: signal });
      expect(run.code, run.stderr).toBe(code);
      expect(transcriptRecords(ws.transcript).at(-1)).toMatchObject({ status: "canceled" });
    },
  );

  it("SIGHUP while the model is thinking: the session ends, exit 129", async () => {
    await using ws = sessionWorkspace();
    fake.api.enqueue(
      toolUseReply("bash", { command: plantCommand(ws.path) }),
      () => new Promise(() => {}), // never answered: the model call is under way when the signal comes
    );
    const cli = startRun(ws, "plant");
    await expect.poll(() => fake.api.requests.length, { timeout: 120_000 }).toBe(2);
    cli.child.kill("SIGHUP");
    const run = await cli.done;
    await expectSessionEnded(ws.path, { transcript: ws.transcript, endedBy: "SIGHUP" });
    expect(run.code, run.stderr).toBe(129);
  });

  it("Ctrl-C twice while a command runs (the second during the end): the end runs to its end, exit 130", async () => {
    await using ws = sessionWorkspace();
    fake.api.enqueue(toolUseReply("bash", { command: plantAndWait(ws.path) }), textReply("done"));
    const cli = startRun(ws, "plant");
    await untilPlanted(ws.path, cli);
    cli.child.kill("SIGINT");
    cli.child.kill("SIGINT");
    const run = await cli.done;
    await expectSessionEnded(ws.path, { transcript: ws.transcript });
    expect(run.code, run.stderr).toBe(130);
  });

  it("SIGTERM, then SIGHUP, SIGINT and SIGTERM again during the end: it is not cut short, exit 143", async () => {
    await using ws = sessionWorkspace();
    fake.api.enqueue(toolUseReply("bash", { command: plantAndWait(ws.path) }), textReply("done"));
    const cli = startRun(ws, "plant");
    await untilPlanted(ws.path, cli);
    cli.child.kill("SIGTERM");
    await expect
      .poll(() => transcriptRecords(ws.transcript).some((r) => r["type"] === "run_end"), { interval: 20 })
      .toBe(true);
    for (const signal of ["SIGHUP", "SIGINT", "SIGTERM"] as const) cli.child.kill(signal);
    const run = await cli.done;
    await expectSessionEnded(ws.path, { transcript: ws.transcript, endedBy: "SIGTERM" });
    expect(run.code, run.stderr).toBe(143);
  });

  it("stdout's reader goes away while a command runs: exit 141, nothing said", async () => {
    await using ws = sessionWorkspace();
    // The line the command prints after the reader went away is harness's next write to stdout.
    const command = `${plantCommand(ws.path)} && sleep 1 && echo tick && ${RUNNING_COMMAND}`;
    fake.api.enqueue(toolUseReply("bash", { command }), textReply("done"));
    const cli = startRun(ws, "plant");
    await untilPlanted(ws.path, cli);
    cli.child.stdout.destroy();
    const run = await cli.done;
    await expectSessionEnded(ws.path, { transcript: ws.transcript, endedBy: "stdout-closed" });
    expect(run.code, run.stderr).toBe(141);
    expect(run.stderr).not.toMatch(/EPIPE|\n\s+at /);
  });

  it("stderr's reader gone (SIGPIPE on stderr): the end still runs when harness next writes there", async () => {
    await using ws = sessionWorkspace();
    fake.api.enqueue(toolUseReply("bash", { command: plantCommand(ws.path) }), textReply("done"));
    const cli = startRun(ws, "plant");
    cli.child.stderr.destroy();
    const run = await cli.done;
    await expectSessionEnded(ws.path, { transcript: ws.transcript });
    expect(run.code).toBe(141);
  });

  it("stdout on a full disk (ENOSPC): the session ends, exit 1", async () => {
    await using ws = sessionWorkspace();
    fake.api.enqueue(toolUseReply("bash", { command: plantAndWait(ws.path) }), textReply("done"));
    const args = ["run", "--workspace", ws.path, "--transcript", ws.transcript, "--timeout", "600", "plant"];
    const child = spawn(process.execPath, [CLI_PATH, ...args], {
      env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "/root", ...fake.env },
      stdio: ["ignore", openSync("/dev/full", "w"), "pipe"],
    });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    await expectSessionEnded(ws.path, { transcript: ws.transcript, endedBy: "stdout-failed" });
    expect(code, stderr).toBe(1);
    expect(stderr).toMatch(/^harness: stdout failed \(ENOSPC\): ending the session/m);
  });

  it.each([
    ["an uncaught writer error", {}],
    ["an unhandled rejection", { HARNESS_TEST_REJECT: "1" }],
  ])("%s while a command runs forces the end: exit 1, run_end says so", async (_what, env) => {
    await using ws = sessionWorkspace();
    fake.api.enqueue(toolUseReply("bash", { command: plantAndWait(ws.path) }), textReply("done"));
    const cli = startRun(ws, "plant", [], { env: { ...CRASH_ON_SIGUSR2, ...env } });
    await untilPlanted(ws.path, cli);
    cli.child.kill("SIGUSR2");
    const run = await cli.done;
    await expectSessionEnded(ws.path, { transcript: ws.transcript, endedBy: "internal-error" });
    expect(run.code, run.stderr).toBe(1);
    expect(transcriptRecords(ws.transcript).at(-1)).toMatchObject({ status: "error" });
  });

  it("the prompt's stdin closed mid-turn: the turn finishes, then the session ends, exit 0", async () => {
    await using ws = sessionWorkspace();
    fake.api.enqueue(
      toolUseReply("bash", { command: `${plantCommand(ws.path)} && sleep 2` }),
      textReply("planted"),
    );
    const cli = startRun(ws, undefined, [], { keepStdin: true, input: "plant\n" });
    await untilPlanted(ws.path, cli);
    cli.child.stdin.end();
    const run = await cli.done;
    await expectSessionEnded(ws.path, { transcript: ws.transcript });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain("planted");
  });

  it("SIGHUP at the idle prompt (the terminal closed between prompts): exit 129", async () => {
    await using ws = sessionWorkspace();
    fake.api.enqueue(toolUseReply("bash", { command: plantCommand(ws.path) }), textReply("planted"));
    const cli = startRun(ws, undefined, [], { keepStdin: true, input: "plant\n" });
    // The turn is over (its run_end written): the prompt waits for the next line.
    await cli.waitForStdout(/planted/, 120_000);
    await expect
      .poll(() => transcriptRecords(ws.transcript).some((r) => r["type"] === "run_end"), { interval: 20 })
      .toBe(true);
    cli.child.kill("SIGHUP");
    const run = await cli.done;
    await expectSessionEnded(ws.path, { transcript: ws.transcript });
    expect(run.code, run.stderr).toBe(129);
  });
});
