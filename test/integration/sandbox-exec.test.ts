import { statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import { skipDocker } from "../support/docker-available.js";
import { makeWorkspace, TEST_UID } from "../support/workspace.js";

describe.skipIf(skipDocker)("DockerSandbox exec", () => {
  it("keeps stdout and stderr apart and reports the exit code", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const result = await sandbox.exec("echo out; echo err >&2; exit 3");
    expect(result).toMatchObject({
      stdout: "out\n",
      stderr: "err\n",
      exitCode: 3,
      failed: true,
      timedOut: false,
    });
    expect(result.shortMessage).toBe("Command failed with exit code 3");
    const ok = await sandbox.exec("true");
    expect(ok).toMatchObject({ exitCode: 0, failed: false, shortMessage: "", stdout: "", stderr: "" });
  });

  it("keeps the working directory between calls, and a new session starts in the workspace", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    expect((await sandbox.exec("pwd")).stdout).toBe("/workspace\n");
    await sandbox.exec("mkdir -p sub/deeper && cd sub");
    const pwd = await sandbox.exec("pwd");
    expect(pwd.stdout).toBe("/workspace/sub\n");
    expect(pwd.cwd).toBe("/workspace/sub");
    await sandbox.exec("cd deeper; exit 4");
    expect((await sandbox.exec("pwd")).stdout).toBe("/workspace/sub/deeper\n");
    await using again = await DockerSandbox.open({ workspace: ws.path });
    expect((await again.exec("pwd")).stdout).toBe("/workspace\n");
  });

  it("runs as the workspace owner, so created files belong to the user, and never as root", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const id = await sandbox.exec("id -u; touch made-here");
    expect(id.stdout.trim()).not.toBe("0");
    expect(statSync(join(ws.path, "made-here")).uid).toBe(TEST_UID);
    const sudo = await sandbox.exec("su -c true root </dev/null");
    expect(sudo.failed).toBe(true);
  });

  it("kills a command that ignores SIGTERM at the timeout, keeps its partial output, and says so", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      killGraceSeconds: 1,
    });
    const result = await sandbox.exec("trap '' TERM; echo before; (trap '' TERM; sleep 600) & sleep 600", {
      timeoutMs: 1500,
    });
    expect(result.timedOut).toBe(true);
    expect(result.failed).toBe(true);
    expect(result.stdout).toBe("before\n");
    expect(result.shortMessage).toBe("Command timed out after 1500 milliseconds");
    const ps = await sandbox.exec("ps -eo args");
    expect(ps.stdout).not.toContain("sleep 600");
  });

  it("kills a child that left the command's session (setsid) along with it", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      killGraceSeconds: 1,
    });
    const result = await sandbox.exec("setsid sh -c 'trap \"\" TERM; sleep 700' & sleep 600", {
      timeoutMs: 1000,
    });
    expect(result.timedOut).toBe(true);
    expect((await sandbox.exec("ps -eo args")).stdout).not.toMatch(/sleep (600|700)/);
  });

  it("cancels through an AbortSignal and kills the command in the container", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      killGraceSeconds: 1,
    });
    const controller = new AbortController();
    const running = sandbox.exec("echo started; sleep 600", {
      signal: controller.signal,
      onOutput: (_stream, chunk) => {
        if (chunk.toString().includes("started")) controller.abort();
      },
    });
    const result = await running;
    expect(result).toMatchObject({ isCanceled: true, timedOut: false, failed: true, stdout: "started\n" });
    expect(result.shortMessage).toBe("Command was canceled");
    expect((await sandbox.exec("ps -eo args")).stdout).not.toContain("sleep 600");
  });

  it("does not wait for a background process that keeps the output pipes open", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    // If the call waited for end of stream it would run into its timeout: the sleeper holds the pipes.
    const result = await sandbox.exec("sleep 300 & echo started", { timeoutMs: 20_000 });
    expect(result).toMatchObject({ stdout: "started\n", exitCode: 0, timedOut: false });
    const closed = await sandbox.exec("exec >&- 2>&-; sleep 1; exit 5", { timeoutMs: 20_000 });
    expect(closed).toMatchObject({ exitCode: 5, timedOut: false });
  });

  it("closes stdin, so a command that reads it gets end of file at once", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const result = await sandbox.exec("cat; echo done", { timeoutMs: 20_000 });
    expect(result).toMatchObject({ stdout: "done\n", timedOut: false });
  });

  it("caps a 200 MB flood with head and tail kept and every byte counted", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const result = await sandbox.exec(
      "echo FIRST; head -c 200000000 /dev/zero | tr '\\0' x; echo; echo LAST",
      {
        timeoutMs: 100_000,
      },
    );
    expect(result.exitCode).toBe(0);
    expect(result.isTruncated).toBe(true);
    expect(result.stdoutBytes).toBe(200_000_000 + "FIRST\n\nLAST\n".length);
    expect(result.stdout.length).toBeLessThan(64 * 1024);
    expect(result.stdout.startsWith("FIRST\nxxx")).toBe(true);
    expect(result.stdout.endsWith("xxx\nLAST\n")).toBe(true);
    expect(result.stdout).toMatch(/bytes of output cut here/);
  });

  it("turns binary and invalid UTF-8 output into safe text", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const result = await sandbox.exec("printf 'a\\377\\376b\\000c'; head -c 300000 /dev/urandom >&2");
    // Every byte that is not text as an escape with its value, counted (issue 35).
    expect(result.stdout).toBe("a\\xff\\xfeb\\x00c");
    expect(result.notTextBytes?.stdout).toBe(3);
    expect(result.stderrBytes).toBe(300_000);
    expect(result.isTruncated).toBe(true);
    expect(() => JSON.stringify(result)).not.toThrow();
  });

  it("sees no network interface but loopback", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const result = await sandbox.exec("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
    expect(result.stdout.trim().split("\n")).toEqual(["lo"]);
  });
});
