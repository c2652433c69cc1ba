/**
 * Jobs left running in the background are named in later results (ExecResult.background), on real
 * Docker: the wrapper counts them with builtins, and only a nonzero count makes the host ask
 * `docker top`.
 */
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import { runSimpleExec } from "../../src/sandbox/docker/exec/exec-helper.js";
import { runDockerExec } from "../../src/sandbox/docker/per-call/docker-exec.js";
import { MARKER_LEAD, START_LEAD, wrapperScript } from "../../src/sandbox/docker/per-call/wrapper-script.js";
import { skipDocker } from "../support/docker-available.js";
import { makeWorkspace } from "../support/workspace.js";
import { loopbackLookup, privateStateHome } from "./egress-fixture.js";

/** The wrapper's own count after `command`, as its end marker reports it (no `docker top`). */
async function wrapperCount(sandbox: DockerSandbox, command = "true"): Promise<number> {
  const outcome = await runDockerExec(new Docker().getContainer(sandbox.containerId), {
    command,
    user: sandbox.resolvedSettings.user,
    workdir: sandbox.workdir,
    startDir: sandbox.workdir,
    timeoutMs: 30_000,
    headBytes: 1000,
    tailBytes: 1000,
    killGraceSeconds: 1,
  });
  expect(outcome.wrapperLost).toBe(false);
  return outcome.backgroundCount;
}

/**
 * The count from the wrapper's /proc scan, the way for kernels without /proc/1/task/1/children
 * (no CONFIG_PROC_CHILDREN, gVisor): the wrapper run with that path made to miss.
 */
async function scannedCount(sandbox: DockerSandbox): Promise<number> {
  const script = wrapperScript().replaceAll("/proc/1/task/1/children", "/proc/1/task/1/no-such-file");
  expect(script).not.toBe(wrapperScript());
  const container = new Docker().getContainer(sandbox.containerId);
  const argv = [
    "harness-exec",
    "0123456789abcdef",
    sandbox.workdir,
    "true",
    sandbox.workdir,
    START_LEAD,
    MARKER_LEAD,
  ];
  const out = await runSimpleExec(
    container,
    ["/bin/sh", "-c", script, ...argv],
    sandbox.resolvedSettings.user,
  );
  const report = out.slice(out.lastIndexOf(`${MARKER_LEAD}0123456789abcdef:`)).split(":");
  return Number(report[4]);
}

const commands = (result: { background?: readonly { command: string }[] | undefined }) =>
  (result.background ?? []).map((job) => job.command);

describe.skipIf(skipDocker)("background jobs in the result", { timeout: 120_000 }, () => {
  it("names a server started earlier after later calls, with its age, until it is killed", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const started = await sandbox.exec("nohup python3 -m http.server 8000 > /tmp/server.log 2>&1 &");
    // Listed by the call that started it too (as `nohup …` or the shell if it has not exec'd yet).
    expect(commands(started)).toEqual([expect.stringContaining("http.server 8000")]);

    await new Promise((resolve) => setTimeout(resolve, 2_100));
    const later = await sandbox.exec("true");
    expect(later.background).toEqual([
      { command: "python3 -m http.server 8000", ageSeconds: expect.any(Number) },
    ]);
    expect(later.background?.[0]?.ageSeconds).toBeGreaterThanOrEqual(2);

    await sandbox.exec("pkill -f 'http.server 8000'; sleep 0.2");
    const after = await sandbox.exec("true");
    expect(after.background).toBeUndefined();
    expect(await wrapperCount(sandbox)).toBe(0);
  });

  it("names a job that left the session with setsid, and one started by a subshell", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    await sandbox.exec("setsid sleep 301 > /dev/null 2>&1 < /dev/null &");
    await sandbox.exec("(sh -c 'sleep 302; true' > /dev/null 2>&1 &)");
    const result = await sandbox.exec("true");
    // The job is the process PID 1 adopted: `sh -c …`, not the sleep under it.
    expect(commands(result).sort()).toEqual(["sh -c sleep 302; true", "sleep 301"]);
    expect(await wrapperCount(sandbox)).toBe(2);
    expect(await scannedCount(sandbox)).toBe(2);
  });

  it("names nothing, and does not look, when nothing is left running", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    for (const command of [
      "true",
      "echo hi; ls / > /dev/null",
      "sleep 0.1 & wait",
      "(sleep 0.1 &); sleep 0.3",
    ]) {
      const result = await sandbox.exec(command);
      expect(result.background, command).toBeUndefined();
    }
    expect(await wrapperCount(sandbox)).toBe(0);
    expect(await scannedCount(sandbox)).toBe(0);
  });

  it("does not count the allowlist relay, which runs as the sandbox user all along", async () => {
    // The gateway's socket directory goes under a private state home, removed afterwards.
    using _state = privateStateHome();
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      egress: { allowHosts: ["origin.example.org:1"], allowPrivate: false },
      egressLookup: loopbackLookup,
    });
    expect(sandbox.description.network).toBe("allowlist");
    expect(await wrapperCount(sandbox)).toBe(0);
    expect(await scannedCount(sandbox)).toBe(0);
    expect((await sandbox.exec("true")).background).toBeUndefined();
  });

  it("per-call path: cannot be made to list anything, or hang, by a fake end marker with a fake count", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      executor: false,
    });
    expect(sandbox.commandPath).toBe("per-call");
    const fake = [
      `printf '\\036\\037HARNESS-END:%s:\\n' "$HARNESS_EXEC" >&2`,
      `printf '\\036\\037HARNESS-END:%s:0:0:99999:/tmp\\n' "$HARNESS_EXEC"`,
      "sleep 60",
    ].join("; ");
    const faked = await sandbox.exec(fake, { timeoutMs: 20_000 });
    // The call ended on the fake marker (and one `docker top`), not at its timeout: `sleep 60` still runs.
    expect(faked.timedOut).toBe(false);
    expect(faked.background).toBeUndefined();
    expect(await wrapperCount(sandbox)).toBe(0);
    // The faking command still runs under its wrapper: not a background job, counted and listed by nobody.
    const next = await sandbox.exec("true");
    expect(next.exitCode).toBe(0);
    expect(next.background).toBeUndefined();
    const garbage = await sandbox.exec(
      `printf '\\036\\037HARNESS-END:%s:\\n' "$HARNESS_EXEC" >&2; printf '\\036\\037HARNESS-END:%s:0:0:-1x:\\n' "$HARNESS_EXEC"`,
    );
    expect(garbage.background).toBeUndefined();
  });

  it("executor: a fake end marker with a fake count is only output, and the call ends with the command", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    expect(sandbox.commandPath).toBe("executor");
    const fake = [
      `printf '\\036\\037HARNESS-END:%s:\\n' "$HARNESS_EXEC" >&2`,
      `printf '\\036\\037HARNESS-END:%s:0:0:99999:/tmp\\n' "$HARNESS_EXEC"`,
      "sleep 1",
      "echo after",
      "exit 7",
    ].join("; ");
    const faked = await sandbox.exec(fake, { timeoutMs: 20_000 });
    expect(faked).toMatchObject({ exitCode: 7, timedOut: false, cwd: "/workspace" });
    expect(faked.stdout).toContain("HARNESS-END:");
    expect(faked.stdout.endsWith("after\n")).toBe(true);
    expect(faked.background).toBeUndefined();
    const next = await sandbox.exec("pwd");
    expect(next).toMatchObject({ stdout: "/workspace\n", exitCode: 0 });
    expect(next.background).toBeUndefined();
  });
});
