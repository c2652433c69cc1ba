import { statfsSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { skipDocker } from "../../support/docker-available.js";
import { makeWorkspace } from "../../support/workspace.js";

describe.skipIf(skipDocker)("adversarial: exhausting resources", () => {
  it("caps endless output, kills it at the timeout, and keeps host memory bounded", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      killGraceSeconds: 1,
    });
    const rssBefore = process.memoryUsage().rss;
    let rssPeak = rssBefore;
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, process.memoryUsage().rss);
    }, 20);
    const flood = await sandbox.exec("yes 'endless output'", { timeoutMs: 4000 });
    clearInterval(sampler);
    expect(flood).toMatchObject({ timedOut: true, isTruncated: true, failed: true });
    // Hundreds of MB went through; only the head and tail were kept.
    expect(flood.stdoutBytes).toBeGreaterThan(50 * 1024 ** 2);
    expect(flood.stdout.length).toBeLessThan(64 * 1024);
    expect(rssPeak - rssBefore).toBeLessThan(150 * 1024 ** 2);
    const after = await sandbox.exec("ps -eo args | grep -c '^yes' ; echo alive");
    expect(after.stdout).toBe("0\nalive\n");
  });

  it("fills /dev/shm only to its 64 MiB, as a plain error", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const fill = await sandbox.exec("head -c 200000000 /dev/zero > /dev/shm/fill", { timeoutMs: 30_000 });
    expect(fill.stderr).toMatch(/No space left on device/);
    expect(fill.oomKilled).toBe(false);
    expect((await sandbox.exec("rm /dev/shm/fill && echo alive")).stdout).toBe("alive\n");
  });

  it("writes 50 MB into the workspace normally: it is the host's disk, with no quota", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const write = await sandbox.exec(
      "head -c 52428800 /dev/zero > big.bin && df -kP /workspace | tail -n 1",
      {
        timeoutMs: 60_000,
      },
    );
    expect(write.exitCode).toBe(0);
    expect(statSync(join(ws.path, "big.bin")).size).toBe(52_428_800);
    // The container sees the host file system's full size: a bind mount has no quota of its own.
    const sizeKiB = Number(write.stdout.trim().split(/\s+/)[1]);
    const host = statfsSync(ws.path);
    expect(sizeKiB).toBe(Math.floor((host.blocks * host.bsize) / 1024));
  });

  it("a child that calls setsid and clears its environment is killed at the timeout too", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      killGraceSeconds: 1,
    });
    await sandbox.exec("sleep 902 </dev/null >/dev/null 2>&1 &");
    // It leaves the session and drops the env tag: the killer finds it by its start time instead.
    const result = await sandbox.exec("setsid env -i sleep 901 & sleep 600", { timeoutMs: 1000 });
    expect(result.timedOut).toBe(true);
    expect(result.notices).toEqual([]);
    const left = await sandbox.exec("ps -eo args");
    expect(left.stdout).not.toMatch(/sleep (901|600)/);
    // A background process from an earlier command is not the timed-out command's: it stays.
    expect(left.stdout).toMatch(/sleep 902/);
  });
});
