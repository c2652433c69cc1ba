import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import { skipDocker } from "../support/docker-available.js";
import { makeWorkspace } from "../support/workspace.js";

/** Whatever a command does to the container, the next call works and the model is told what happened. */
describe.skipIf(skipDocker)("DockerSandbox recovery", () => {
  it("survives kill -9 -1 from the sandbox user", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    await sandbox.exec("cd /tmp");
    // Everything of the sandbox user but the shell sending it dies; harness's machinery is root and
    // out of its reach (issue 19), so the call ends as the shell does, and nothing needs restarting.
    const killed = await sandbox.exec("sleep 60 & kill -9 -1; echo sent", { timeoutMs: 20_000 });
    expect(killed).toMatchObject({ stdout: "sent\n", exitCode: 0, notices: [] });
    const next = await sandbox.exec("echo alive; pwd");
    expect(next).toMatchObject({ stdout: "alive\n/tmp\n", exitCode: 0, notices: [] });
  });

  it("recovers from a fork bomb that exhausts the pid limit", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      pidsLimit: 64,
      killGraceSeconds: 1,
    });
    // A bomb that keeps retrying pins the pid limit for good; the call itself returns at once.
    // It returns once the container holds (nearly) as many processes as the limit allows; counting
    // uses only builtins, since forking is exactly what stops working.
    const bomb = await sandbox.exec(
      "bomb() { while :; do bomb & done; }; bomb & while :; do n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; [ $n -ge 60 ] && break; done; echo lit",
      { timeoutMs: 20_000 },
    );
    expect(bomb.stdout).toContain("lit");
    const next = await sandbox.exec("echo alive", { timeoutMs: 20_000 });
    expect(next.stdout).toBe("alive\n");
    expect(next.exitCode).toBe(0);
    // Whether this call found the pid table full (and restarted the container) depends on timing;
    // either way it and the ones after it must work.
    for (let i = 0; i < 3; i++) {
      expect((await sandbox.exec(`echo again-${i}`, { timeoutMs: 20_000 })).stdout).toBe(`again-${i}\n`);
    }
  });

  it.each([
    ["executor", true],
    ["per-call", false],
  ])(
    "recovers from a fork bomb that runs in the foreground until its timeout (%s path)",
    async (path, executor) => {
      using ws = makeWorkspace();
      await using sandbox = await DockerSandbox.open({
        workspace: ws.path,
        removeOnStop: true,
        pidsLimit: 64,
        killGraceSeconds: 1,
        executor,
      });
      const bomb = await sandbox.exec("bomb() { bomb | bomb; }; bomb", { timeoutMs: 3000 });
      expect(sandbox.commandPath).toBe(path);
      expect(bomb).toMatchObject({ failed: true, timedOut: true });
      // The per-call path needs a new process to kill (a kill exec), which a full pid table refuses:
      // then the container is restarted (on a loaded machine the bomb may not have filled the table
      // yet, and the kill exec just runs). The executor kills from inside, with no process to start.
      if (path === "per-call") {
        for (const notice of bomb.notices) expect(notice).toMatch(/sandbox container was restarted/);
      } else expect(bomb.notices).toEqual([]);
      const next = await sandbox.exec("echo alive", { timeoutMs: 20_000 });
      expect(next).toMatchObject({ stdout: "alive\n", exitCode: 0 });
      expect((await sandbox.exec("ps -e --no-headers | wc -l")).stdout.trim()).not.toBe("64");
    },
  );

  it("turns a full /tmp into a plain error, and the next call works", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      tmpSizeMiB: 16,
    });
    const fill = await sandbox.exec("head -c 64000000 /dev/zero > /tmp/fill", { timeoutMs: 30_000 });
    expect(fill.failed).toBe(true);
    expect(fill.stderr).toMatch(/No space left on device/);
    const next = await sandbox.exec("rm /tmp/fill; echo alive");
    expect(next).toMatchObject({ stdout: "alive\n", exitCode: 0 });
  });

  it("reports an OOM kill as such, and the next call works", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      memoryBytes: 128 * 1024 ** 2,
      tmpSizeMiB: 16,
      homeSizeMiB: 16,
    });
    const oom = await sandbox.exec("python3 -c 'x = bytearray(1024 * 1024 * 1024); print(len(x))'", {
      timeoutMs: 60_000,
    });
    expect(oom.oomKilled).toBe(true);
    expect(oom.exitCode).toBe(137);
    expect(oom.shortMessage).toMatch(/out-of-memory/);
    const next = await sandbox.exec("echo alive");
    expect(next).toMatchObject({ stdout: "alive\n", oomKilled: false });
  });

  it("recreates a container that was removed from under it, and says so", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    await sandbox.exec("cd /tmp");
    const before = sandbox.containerId;
    const Docker = (await import("dockerode")).default;
    await new Docker().getContainer(before).remove({ force: true });
    const next = await sandbox.exec("pwd");
    expect(next.stdout).toBe("/workspace\n");
    expect(next.notices.join("\n")).toMatch(/recreated/);
    expect(sandbox.containerId).not.toBe(before);
  });

  it("starts a container that was stopped from outside", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const Docker = (await import("dockerode")).default;
    await new Docker().getContainer(sandbox.containerId).stop({ t: 0 });
    const next = await sandbox.exec("echo alive");
    expect(next.stdout).toBe("alive\n");
    expect(next.notices.join("\n")).toMatch(/was started/);
  });
});
