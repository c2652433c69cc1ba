/**
 * Every way an `harness mcp` session can end runs the end of the session (src/cli/session/): a call
 * plants a nested repository whose config the owner's `git status` would run and leaves a background
 * job; then the session is ended one way or another, and the host sees the repository moved aside,
 * `git status` running nothing, no process of the run left in the container, and run_end recorded.
 * The built CLI, a raw JSON-RPC client (to close its pipes at will), the real Docker sandbox.
 */
import { existsSync, readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { skipDocker } from "../support/docker-available.js";
import { type RunningCli, spawnCli } from "../support/run-cli.js";
import {
  CRASH_ON_SIGUSR2,
  expectSessionEnded,
  plantAndWait,
  plantCommand,
  sessionWorkspace,
  transcriptRecords,
  untilPlanted,
} from "../support/session-end-fixture.js";

interface RawClient {
  cli: RunningCli;
  /** Sends a bash call; resolves its JSON-RPC id. */
  call(command: string): number;
  /** Resolves once the answer to call `id` is on stdout. */
  answered(id: number): Promise<void>;
}

function rawClient(workspace: string, transcript: string, env: Record<string, string> = {}): RawClient {
  const cli = spawnCli(["mcp", "--workspace", workspace, "--transcript", transcript, "--timeout", "300"], {
    keepStdin: true,
    env,
    timeoutMs: 240_000,
  });
  // harness may be gone before the test's last write.
  cli.child.stdin.on("error", () => {});
  const send = (message: Record<string, unknown>) =>
    cli.child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
  send({
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
  });
  send({ method: "notifications/initialized" });
  let next = 1;
  return {
    cli,
    call: (command) => {
      next += 1;
      send({ id: next, method: "tools/call", params: { name: "bash", arguments: { command } } });
      return next;
    },
    answered: (id) => cli.waitForStdout(new RegExp(`"id":${id}[,}]`), 120_000),
  };
}

describe.skipIf(skipDocker)("the end of an MCP session", { timeout: 300_000 }, () => {
  it.each([
    ["its stdin and stdout", true],
    ["its stdout only", false],
  ])(
    "a client that goes away mid-call (closing %s): the answer's EPIPE ends the session, as SIGTERM does",
    async (_what, stdinToo) => {
      await using ws = sessionWorkspace();
      const client = rawClient(ws.path, ws.transcript);
      await client.answered(client.call(plantCommand(ws.path)));
      client.call("sleep 2; echo late");
      // The client exits: its end of the pipes closes while the call runs.
      client.cli.child.stdout.destroy();
      if (stdinToo) client.cli.child.stdin.end();
      const run = await client.cli.done;
      await expectSessionEnded(ws.path, { transcript: ws.transcript, endedBy: "stdout-closed" });
      expect(run.stderr).not.toMatch(/EPIPE\n|\n\s+at /);
      expect(run.code, run.stderr).toBe(141);
    },
  );

  it("the client closes stdin between calls: the session ends, exit 0", async () => {
    await using ws = sessionWorkspace();
    const client = rawClient(ws.path, ws.transcript);
    await client.answered(client.call(plantCommand(ws.path)));
    client.cli.child.stdin.end();
    const run = await client.cli.done;
    await expectSessionEnded(ws.path, { transcript: ws.transcript });
    expect(run.code, run.stderr).toBe(0);
    expect(transcriptRecords(ws.transcript).at(-1)).toMatchObject({ status: "submitted" });
  });

  it("the client closes stdin mid-call and still reads: the call is answered, then the session ends", async () => {
    await using ws = sessionWorkspace();
    const client = rawClient(ws.path, ws.transcript);
    const id = client.call(`${plantCommand(ws.path)} && sleep 2 && echo answered`);
    await untilPlanted(ws.path, client.cli);
    client.cli.child.stdin.end();
    const run = await client.cli.done;
    await expectSessionEnded(ws.path, { transcript: ws.transcript });
    expect(run.code, run.stderr).toBe(0);
    const answer = run.stdout.split("\n").find((line) => line.endsWith(`"id":${id}}`));
    expect(answer).toContain("answered");
  });

  it.each([
    ["SIGTERM", 143],
    ["SIGHUP", 129],
    ["SIGINT", 130],
  ] as const)("%s mid-call ends the session: the call is stopped, exit %d", async (signal, code) => {
    await using ws = sessionWorkspace();
    const client = rawClient(ws.path, ws.transcript);
    client.call(plantAndWait(ws.path));
    await untilPlanted(ws.path, client.cli);
    client.cli.child.kill(signal);
    const run = await client.cli.done;
    await expectSessionEnded(ws.path, { transcript: ws.transcript, endedBy: signal });
    expect(run.code, run.stderr).toBe(code);
  });

  it("stderr's reader gone (SIGPIPE on stderr): the session's end still runs to its end", async () => {
    await using ws = sessionWorkspace();
    const client = rawClient(ws.path, ws.transcript);
    await client.answered(client.call(plantCommand(ws.path)));
    client.cli.child.stderr.destroy();
    // harness writes to stderr only as the session ends: that write fails, mid-end.
    client.cli.child.stdin.end();
    const run = await client.cli.done;
    await expectSessionEnded(ws.path, { transcript: ws.transcript });
    expect(run.code).toBe(141);
  });

  it.each([
    ["an uncaught writer error", {}],
    ["an unhandled rejection", { HARNESS_TEST_REJECT: "1" }],
  ])("%s mid-call forces the end: every held end runs, exit 1", async (_what, env) => {
    await using ws = sessionWorkspace();
    const client = rawClient(ws.path, ws.transcript, { ...CRASH_ON_SIGUSR2, ...env });
    client.call(plantAndWait(ws.path));
    await untilPlanted(ws.path, client.cli);
    client.cli.child.kill("SIGUSR2");
    const run = await client.cli.done;
    await expectSessionEnded(ws.path, { transcript: ws.transcript, endedBy: "internal-error" });
    expect(run.code, run.stderr).toBe(1);
    expect(run.stderr).toMatch(/^harness: internal error: injected/m);
    expect(transcriptRecords(ws.transcript).at(-1)).toMatchObject({ status: "error" });
  });

  it("SIGTERM between calls, the client still connected: exit 143", async () => {
    await using ws = sessionWorkspace();
    const client = rawClient(ws.path, ws.transcript);
    await client.answered(client.call(plantCommand(ws.path)));
    client.cli.child.kill("SIGTERM");
    const run = await client.cli.done;
    await expectSessionEnded(ws.path, { transcript: ws.transcript, endedBy: "SIGTERM" });
    expect(run.code, run.stderr).toBe(143);
  });

  it("signals during the end do not cut it short", async () => {
    await using ws = sessionWorkspace();
    const client = rawClient(ws.path, ws.transcript);
    client.call(plantAndWait(ws.path));
    await untilPlanted(ws.path, client.cli);
    client.cli.child.kill("SIGTERM");
    // run_end is written as the end begins; the sandbox's stop (and the move aside) comes after it.
    await expect
      .poll(() => existsSync(ws.transcript) && readFileSync(ws.transcript, "utf8").includes('"run_end"'), {
        timeout: 60_000,
        interval: 20,
      })
      .toBe(true);
    for (const signal of ["SIGHUP", "SIGINT", "SIGTERM"] as const) client.cli.child.kill(signal);
    const run = await client.cli.done;
    await expectSessionEnded(ws.path, { transcript: ws.transcript, endedBy: "SIGTERM" });
    expect(run.code, run.stderr).toBe(143);
  });
});
