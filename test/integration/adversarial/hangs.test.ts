import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { SandboxError } from "../../../src/errors.js";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import type { ExecResult } from "../../../src/sandbox/sandbox.js";
import { copyOf } from "../../support/copied.js";
import { skipDocker } from "../../support/docker-available.js";
import { runCli } from "../../support/run-cli.js";
import { driveShell } from "../../support/shell-driver.js";
import { makeWorkspace } from "../../support/workspace.js";
import { removesContainerOf } from "../../support/workspace-container.js";

/**
 * A task that leaves something behind (in the tmpfs harness once kept its state in, in the
 * workspace, in its home) must never make a later call, or a later run, hang: each one works or
 * fails with a clear message. Every outcome is checked from the host: a call's result, and the
 * container's processes as `docker top` lists them.
 */

/** Generous for one short command; a call that hangs on a planted fifo runs into it. */
const CALL_MS = 8000;

function expectWorks(result: ExecResult, stdout: string): void {
  expect({ timedOut: result.timedOut, exitCode: result.exitCode, stdout: result.stdout }).toEqual({
    timedOut: false,
    exitCode: 0,
    stdout,
  });
}

/** The command lines of every process in the container, from the host. */
async function processesOf(containerId: string): Promise<string[]> {
  const top = (await new Docker().getContainer(containerId).top({ ps_args: "-eo pid,args" })) as {
    Processes?: string[][];
  };
  return (top.Processes ?? []).map((row) => row.join(" "));
}

async function containerExists(id: string): Promise<boolean> {
  return new Docker()
    .getContainer(id)
    .inspect()
    .then(
      () => true,
      () => false,
    );
}

describe.skipIf(skipDocker)("adversarial: leftovers that could hang later calls", () => {
  it("a fifo planted as the saved working directory hangs neither later calls nor a later run", async () => {
    using ws = makeWorkspace();
    // No removeOnStop: the second open reuses the container, as the next `harness run` would.
    await using _container = removesContainerOf(ws.path);
    {
      await using first = await DockerSandbox.open({ workspace: ws.path, killGraceSeconds: 1 });
      await first.exec("mkdir -p sub && cd sub");
      // Whatever this call itself does (it may hang on its own fifo), it must come back.
      await first.exec("rm -rf /run/harness/cwd && mkfifo /run/harness/cwd", { timeoutMs: CALL_MS });
      expectWorks(await first.exec("echo ok", { timeoutMs: CALL_MS }), "ok\n");
      await first.exec("cd /tmp", { timeoutMs: CALL_MS });
      expectWorks(await first.exec("pwd", { timeoutMs: CALL_MS }), "/tmp\n");
    }
    await using second = await DockerSandbox.open({ workspace: ws.path, killGraceSeconds: 1 });
    expect(second.acquired).toBe("reused");
    expectWorks(await second.exec("pwd", { timeoutMs: CALL_MS }), "/workspace\n");
    expectWorks(await second.exec("cd sub && echo again", { timeoutMs: CALL_MS }), "again\n");
    expectWorks(await second.exec("pwd", { timeoutMs: CALL_MS }), "/workspace/sub\n");
  });

  const tampered: [string, string][] = [
    [
      "forged with this call's nonce, a wrong pid and start time",
      `printf '%s 99999 99999999999\\n' "$HARNESS_EXEC" > /run/harness/current`,
    ],
    ["garbage", "head -c 4096 /dev/urandom > /run/harness/current"],
    ["a fifo", "rm -rf /run/harness/current; mkfifo /run/harness/current"],
    ["a directory", "rm -rf /run/harness/current; mkdir /run/harness/current"],
    ["removed", "rm -rf /run/harness/current"],
    ["an unreadable state directory", "chmod 000 /run/harness"],
  ];
  it.each(tampered)(
    "the timeout kills everything the command started when it rewrote harness's state: %s",
    async (_name, tamper) => {
      using ws = makeWorkspace();
      await using sandbox = await DockerSandbox.open({
        workspace: ws.path,
        removeOnStop: true,
        killGraceSeconds: 1,
      });
      // A child that leaves the session and clears its environment, and the command's own sleep.
      const result = await sandbox.exec(
        `${tamper}; setsid env -i sleep 901 </dev/null >/dev/null 2>&1 & sleep 602`,
        { timeoutMs: 1500 },
      );
      expect(result.timedOut).toBe(true);
      // Killed from inside, not by restarting the container.
      expect(result.notices).toEqual([]);
      expect((await processesOf(sandbox.containerId)).filter((p) => /sleep (901|602)/.test(p))).toEqual([]);
      expectWorks(await sandbox.exec("echo ok", { timeoutMs: CALL_MS }), "ok\n");
    },
  );

  /**
   * What a task leaves behind. Those ending in `kill -9 $$` kill the command's own shell, so nothing
   * of harness's can tidy up after it.
   */
  const leftovers: [string, string][] = [
    ["the saved cwd a fifo", "rm -rf /run/harness/cwd; mkfifo /run/harness/cwd; kill -9 $$"],
    [
      "the saved cwd a link to /dev/zero",
      "rm -rf /run/harness/cwd; ln -s /dev/zero /run/harness/cwd; kill -9 $$",
    ],
    [
      "the saved cwd a link to a fifo in /tmp",
      "mkfifo /tmp/f; rm -rf /run/harness/cwd; ln -s /tmp/f /run/harness/cwd; kill -9 $$",
    ],
    ["the saved cwd a directory", "rm -rf /run/harness/cwd; mkdir /run/harness/cwd; kill -9 $$"],
    ["the saved cwd a file of garbage", "head -c 65536 /dev/urandom > /run/harness/cwd; kill -9 $$"],
    [
      "the state tmpfs full of one line",
      "head -c 2000000 /dev/zero | tr '\\0' a > /run/harness/cwd; kill -9 $$",
    ],
    ["the state file a fifo", "rm -rf /run/harness/current; mkfifo /run/harness/current; kill -9 $$"],
    ["the state directory unreadable", "chmod 000 /run/harness"],
    ["the state directory read-only", "chmod 500 /run/harness"],
    ["the state directory emptied", "rm -rf /run/harness/* /run/harness/.[!.]*; kill -9 $$"],
    ["the working directory removed", "mkdir /tmp/gone && cd /tmp/gone && rmdir /tmp/gone"],
    ["the working directory made unusable", "mkdir /tmp/locked && cd /tmp/locked && chmod 000 /tmp/locked"],
    ["the workspace itself made unusable", "chmod 000 /workspace"],
    ["/tmp and the home directory full", "cat /dev/zero > /tmp/fill; cat /dev/zero > ~/fill"],
    [
      "a background process that keeps planting fifos",
      "(while :; do for f in cwd current; do rm -rf /run/harness/$f; mkfifo /run/harness/$f; done; sleep 0.05; done) </dev/null >/dev/null 2>&1 &",
    ],
  ];
  it.each(leftovers)("a later call works after %s", async (_name, plant) => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      killGraceSeconds: 1,
    });
    await sandbox.exec("cd /tmp", { timeoutMs: CALL_MS });
    await sandbox.exec(plant, { timeoutMs: CALL_MS });
    const next = await sandbox.exec("echo ok; chmod 755 /workspace", { timeoutMs: CALL_MS });
    expectWorks(next, "ok\n");
    expect(next.notices).toEqual([]);
    await sandbox.exec("cd /workspace", { timeoutMs: CALL_MS });
    expectWorks(await sandbox.exec("pwd", { timeoutMs: CALL_MS }), "/workspace\n");
  });

  it("a background subshell that never execs holds no call open, and the cwd still carries over", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const started = await sandbox.exec(
      "(while :; do sleep 0.2; done) </dev/null >/dev/null 2>&1 & { sleep 600; } </dev/null >/dev/null 2>&1 & cd /tmp",
      { timeoutMs: 20_000 },
    );
    expect(started).toMatchObject({ timedOut: false, exitCode: 0 });
    expectWorks(await sandbox.exec("pwd", { timeoutMs: CALL_MS }), "/tmp\n");
  });

  it("harness shell starts after the task planted fifos for what an interactive bash reads", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    await sandbox.exec(
      "cd ~ && mkfifo .inputrc .bash_history .bash_logout && mkdir -p .config/readline && mkfifo .config/readline/inputrc",
    );
    const shell = driveShell(sandbox);
    shell.type("echo shell-$((6 * 7)); exit 3");
    expect(await shell.exited).toBe(3);
    expect(shell.seen()).toContain("shell-42");
  });
});

describe.skipIf(skipDocker)("adversarial: copy mode with changes over the copy limit", () => {
  it("ends with a SandboxError, and the container can be removed", async () => {
    using ws = makeWorkspace();
    const sandbox = await DockerSandbox.open({
      workspace: ws.path,
      isolation: "copy",
      copyLimitBytes: 1_000_000,
      killGraceSeconds: 1,
    });
    const id = sandbox.containerId;
    try {
      expectWorks(await sandbox.exec("head -c 5000000 /dev/urandom > big && echo written"), "written\n");
      await expect(copyOf(sandbox).exportChanges()).rejects.toThrow(SandboxError);
      await expect(copyOf(sandbox).exportChanges()).rejects.toThrow(/copy limit/);
    } finally {
      await sandbox.stop();
    }
    expect(await containerExists(id)).toBe(false);
  });

  it("harness exec says so in one line, exits 1 and leaves no container", async () => {
    using ws = makeWorkspace();
    const run = await runCli(
      [
        "exec",
        "--isolation",
        "copy",
        "--copy-limit",
        "1m",
        "-w",
        ws.path,
        "--",
        "head -c 5000000 /dev/urandom > big; echo written",
      ],
      { timeoutMs: 90_000 },
    );
    expect(run.stdout).toBe("written\n");
    expect(run.stderr.split("\n").filter((line) => /copy limit/.test(line))).toEqual([
      expect.stringMatching(/^harness: the sandbox's workspace holds more than the copy limit/),
    ]);
    expect(run.stderr).not.toMatch(/^\s+at /m);
    expect(run.code).toBe(1);
    const left = await new Docker().listContainers({
      all: true,
      filters: { label: [`dev.harness.workspace=copy:${ws.path}`] },
    });
    expect(left).toEqual([]);
  });
});
