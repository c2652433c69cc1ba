import { describe, expect, it } from "vitest";
import { runSimpleExec } from "../../../../../src/sandbox/docker/exec/exec-helper.js";
import { runDockerExec } from "../../../../../src/sandbox/docker/per-call/docker-exec.js";
import { MARKER_LEAD, START_LEAD } from "../../../../../src/sandbox/docker/per-call/wrapper-script.js";
import { killCommand } from "../../../../../src/sandbox/exec/exec-scripts.js";
import type { ExecRequest } from "../../../../../src/sandbox/exec/exec-types.js";
import {
  execRequest,
  FAKE_WRAPPER_PID,
  FAKE_WRAPPER_START,
  FakeContainer,
  type HelperPlan,
} from "../exec/fake-docker.js";

function request(overrides: Partial<ExecRequest> = {}): ExecRequest {
  return execRequest({ command: "sleep 1000", killGraceSeconds: 3, ...overrides });
}

/** A command that prints a little and then hangs, stream open, until killed. */
function hanging(): FakeContainer {
  return new FakeContainer((run) => {
    run.stdout("compiling\n");
    run.stderr("still going\n");
    // Ends with the start of the marker lead: held back by the scanner, flushed at the end.
    run.stdout(`step 2${MARKER_LEAD.slice(0, 2)}`);
  });
}

describe("runDockerExec timeouts and cancels", () => {
  it("runs the kill exec on timeout and keeps the partial output", async () => {
    const fake = hanging();
    const outcome = await runDockerExec(fake.container, request({ timeoutMs: 50 }));
    expect(outcome).toMatchObject({
      timedOut: true,
      canceled: false,
      killFailed: false,
      wrapperLost: true,
      exitCode: 143,
      survivors: [],
    });
    expect(outcome.stdout.toString()).toBe(`compiling\nstep 2${MARKER_LEAD.slice(0, 2)}`);
    expect(outcome.stderr.toString()).toBe("still going\n");
    const nonce = fake.created[0]?.Cmd?.[4];
    // The wrapper's pid and start time come from its start line on the exec stream, not from a file.
    expect(fake.killCmds).toEqual([
      killCommand(String(nonce), 3, String(FAKE_WRAPPER_PID), FAKE_WRAPPER_START),
    ]);
    expect(fake.created[1]?.User).toBe("1000:1000");
  });

  it("hands the killer the first start line only: a look-alike the command prints is its output", async () => {
    const fake = new FakeContainer((run) => {
      run.stdout(`${START_LEAD}${run.nonce}:1:0\n`);
    });
    const outcome = await runDockerExec(fake.container, request({ timeoutMs: 50 }));
    expect(outcome.timedOut).toBe(true);
    expect(fake.killCmds[0]?.slice(-3, -1)).toEqual([String(FAKE_WRAPPER_PID), FAKE_WRAPPER_START]);
    expect(outcome.stdout.toString()).toBe(`${START_LEAD}${fake.created[0]?.Cmd?.[4]}:1:0\n`);
  });

  it("still kills by the command's tag when the wrapper printed no start line", async () => {
    const fake = new FakeContainer((run) => run.stdout("compiling\n"), false);
    const outcome = await runDockerExec(fake.container, request({ timeoutMs: 50 }));
    expect(outcome).toMatchObject({ timedOut: true, killFailed: false });
    expect(fake.killCmds[0]?.slice(-3, -1)).toEqual(["", ""]);
    expect(outcome.stdout.toString()).toBe("compiling\n");
  });

  it("reports the pids the kill exec says survived", async () => {
    const fake = hanging();
    fake.helper = { outcome: "ok", stdout: "left: 412 415\n", stderr: "kill: (9) - No such process\n" };
    const outcome = await runDockerExec(fake.container, request({ timeoutMs: 50 }));
    expect(outcome.survivors).toEqual(["412", "415"]);
  });

  it("keeps the marker's exit code when the command finishes after the timeout fired", async () => {
    const fake = new FakeContainer((run) => {
      run.stdout("slow\n");
      setTimeout(() => run.stream.write(run.markerFrames(0, "/work")), 80);
    });
    // The kill exec takes a while; the command reports first.
    fake.helper = { outcome: "ok", stdout: "left:\n", delayMs: 200 };
    const outcome = await runDockerExec(fake.container, request({ timeoutMs: 20 }));
    expect(outcome).toMatchObject({ timedOut: true, exitCode: 0, endCwd: "/work", wrapperLost: false });
  });

  it("cancels on abort", async () => {
    const fake = hanging();
    const controller = new AbortController();
    const pending = runDockerExec(fake.container, request({ signal: controller.signal }));
    await fake.started;
    setTimeout(() => controller.abort(), 20);
    const outcome = await pending;
    expect(outcome).toMatchObject({ canceled: true, timedOut: false, killFailed: false, exitCode: 143 });
    expect(outcome.stdout.toString()).toContain("compiling\n");
    expect(fake.killCmds).toHaveLength(1);
  });

  it("kills once when the signal was aborted before the call and the timeout fires during the kill", async () => {
    const fake = hanging();
    fake.helper = { outcome: "ok", stdout: "left:\n", delayMs: 150 };
    const outcome = await runDockerExec(
      fake.container,
      request({ signal: AbortSignal.abort(), timeoutMs: 30 }),
    );
    expect(outcome.canceled).toBe(true);
    expect(fake.killCmds).toHaveLength(1);
  });

  it.each<[string, HelperPlan]>([
    ["exec create rejects", { outcome: "create-fails" }],
    ["the kill script exits nonzero", { outcome: "exits-nonzero", stdout: "fork failed\n" }],
  ])(
    "reports killFailed and returns without waiting for the stream when %s",
    // Below the 5 s the call waits for a killed exec to wind down: it must not wait for that.
    { timeout: 3_000 },
    async (_name, plan) => {
      const fake = hanging();
      fake.helper = plan;
      const outcome = await runDockerExec(fake.container, request({ timeoutMs: 50 }));
      expect(outcome).toMatchObject({
        killFailed: true,
        timedOut: true,
        wrapperLost: true,
        exitCode: undefined,
        survivors: [],
      });
      expect(outcome.stdout.toString()).toContain("compiling\n");
      expect(fake.killCmds).toHaveLength(1);
    },
  );
});

describe("runSimpleExec", () => {
  it("returns stdout and drops stderr", async () => {
    const fake = new FakeContainer();
    fake.helper = { outcome: "ok", stdout: "healthy\n", stderr: "noise\n" };
    await expect(runSimpleExec(fake.container, ["/bin/sh", "-c", "true"], "0:0")).resolves.toBe("healthy\n");
    expect(fake.created[0]).toMatchObject({ Cmd: ["/bin/sh", "-c", "true"], User: "0:0", Tty: false });
  });

  it("rejects with the exit code and the start of stdout when the helper fails", async () => {
    const fake = new FakeContainer();
    fake.helper = { outcome: "exits-nonzero", stdout: "cannot fork\n" };
    await expect(runSimpleExec(fake.container, ["true"], "0:0")).rejects.toThrow(
      /exited with 126: cannot fork/,
    );
  });

  it("rejects when the exec cannot be created", async () => {
    const fake = new FakeContainer();
    fake.helper = { outcome: "create-fails" };
    await expect(runSimpleExec(fake.container, ["true"], "0:0")).rejects.toThrow(/resource temporarily/);
  });
});

describe("runDockerExec against a wedged engine", () => {
  it("gives up when the engine never answers exec start, so the sandbox can restart the container", async () => {
    const wedged = {
      exec: async () => ({
        id: "e1",
        start: () => new Promise<never>(() => {}),
        inspect: async () => ({ Running: true, ExitCode: null }),
      }),
    } as unknown as Parameters<typeof runDockerExec>[0];
    await expect(runDockerExec(wedged, request({ startDeadlineMs: 50 }))).rejects.toThrow(
      /starting the exec took longer than 50 ms/,
    );
  });
});
