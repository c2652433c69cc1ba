import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import { skipDocker } from "../support/docker-available.js";
import { makeWorkspace } from "../support/workspace.js";

/** The hardening, read back from the engine with `docker inspect`, and felt from inside. */
describe.skipIf(skipDocker)("sandbox hardening", () => {
  it("creates the container with every default restriction", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const info = await new Docker().getContainer(sandbox.containerId).inspect();
    const host = info.HostConfig;
    expect(host.NetworkMode).toBe("none");
    expect(host.CapDrop).toEqual(["ALL"]);
    // Only what the machinery needs to drop to the workspace owner (container-spec.ts MACHINERY_CAPS).
    expect(host.CapAdd).toEqual(["SETUID", "SETGID"]);
    expect(host.SecurityOpt).toContain("no-new-privileges:true");
    expect(host.Privileged).toBe(false);
    expect(host.ReadonlyRootfs).toBe(true);
    expect(host.PidsLimit).toBe(512);
    expect(host.Memory).toBe(2 * 1024 ** 3);
    expect(host.MemorySwap).toBe(2 * 1024 ** 3);
    expect(host.NanoCpus).toBe(2e9);
    expect(host.Tmpfs?.["/tmp"]).toMatch(/size=512m/);
    expect(host.Tmpfs?.["/home/sandbox"]).toMatch(/size=256m/);
    // The container's user is the machinery's; commands run as the workspace owner (exec's User).
    expect(info.Config.User).toBe("0:0");
    const mounts = info.Mounts.map((m) => `${m.Source}:${m.Destination}`);
    expect(mounts).toEqual([`${ws.path}:/workspace`]);
    expect(JSON.stringify(info.Mounts)).not.toContain("docker.sock");
  });

  it("lets no host environment in: the API key is in no process of the sandbox", async () => {
    using ws = makeWorkspace();
    const before = process.env["ANTHROPIC_API_KEY"];
    process.env["ANTHROPIC_API_KEY"] = "sk-ant-test-secret-must-not-leak";
    try {
      await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
      const info = await new Docker().getContainer(sandbox.containerId).inspect();
      expect(info.Config.Env.join("\n")).not.toMatch(/ANTHROPIC|sk-ant/);
      const env = await sandbox.exec("cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'; env");
      expect(env.stdout).not.toMatch(/ANTHROPIC|sk-ant/);
      expect(env.stdout).toContain("HOME=/home/sandbox");
    } finally {
      if (before === undefined) delete process.env["ANTHROPIC_API_KEY"];
      else process.env["ANTHROPIC_API_KEY"] = before;
    }
  });

  it("refuses what the restrictions forbid, from inside", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const rootfs = await sandbox.exec("touch /etc/owned");
    expect(rootfs.stderr).toMatch(/Read-only file system|Permission denied/);
    expect((await sandbox.exec("grep CapEff /proc/self/status")).stdout).toMatch(/CapEff:\s+0+\n/);
    expect((await sandbox.exec("grep NoNewPrivs /proc/self/status")).stdout).toMatch(/NoNewPrivs:\s+1/);
    expect((await sandbox.exec("test -e /var/run/docker.sock")).exitCode).toBe(1);
    expect(
      (await sandbox.exec("cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max"))
        .stdout,
    ).toBe("512\n");
    expect((await sandbox.exec("df -m /tmp | tail -n 1")).stdout).toMatch(/\s512\s/);
  });

  it("refuses a workspace owned by root instead of running as root", async () => {
    const { mkdtempSync, rmSync } = await import("node:fs");
    const dir = mkdtempSync("/tmp/harness-root-ws-");
    try {
      const opening = DockerSandbox.open({ workspace: dir, removeOnStop: true });
      if (process.getuid?.() === 0) await expect(opening).rejects.toThrow(/owned by root.*--user/);
      else await (await opening).stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
