import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { skipDocker } from "../../support/docker-available.js";
import { makeWorkspace } from "../../support/workspace.js";

/** File systems that are not a host disk: the container's own overlay root and kernel/virtual ones. */
const VIRTUAL_FS = new Set(["overlay", "proc", "sysfs", "tmpfs", "devpts", "mqueue", "cgroup", "cgroup2"]);

/** What Docker itself bind-mounts for every container (with --network none, only the hostname). */
const DOCKER_FILES = /^\/var\/lib\/docker\/containers\/[0-9a-f]{64}\/(hostname|hosts|resolv\.conf)$/;

/** The workspace on /workspace, or a path inside it on the same place below /workspace (protective mounts). */
function inWorkspace(root: string, mountPoint: string, workspace: string): boolean {
  if (root !== workspace && !root.startsWith(`${workspace}/`)) return false;
  return mountPoint === `/workspace${root.slice(workspace.length)}`;
}

describe.skipIf(skipDocker)("adversarial: reading the host", () => {
  it("cannot find a host file outside the workspace, nor its contents anywhere", async () => {
    using ws = makeWorkspace();
    const outside = mkdtempSync(join(tmpdir(), "harness-host-secret-"));
    const secret = `host-secret-${randomBytes(8).toString("hex")}`;
    writeFileSync(join(outside, "secret.txt"), `${secret}\n`, { mode: 0o644 });
    try {
      await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
      const probe = await sandbox.exec(
        `test -e '${outside}/secret.txt' && echo VISIBLE; ls ../ 2>&1; ` +
          `grep -rlsF '${secret.slice(0, 12)}''${secret.slice(12)}' / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev; true`,
        { timeoutMs: 60_000 },
      );
      expect(probe.stdout).not.toContain("VISIBLE");
      // `..` of the workspace is the container's root, not the host directory that holds it.
      expect(probe.stdout.split("\n")).toContain("workspace");
      expect(probe.stdout).not.toContain(outside.split("/").pop());
      expect(probe.stdout).not.toMatch(/secret\.txt/);
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it("mounts no host disk path but the workspace (and Docker's per-container hostname file)", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const mountinfo = (await sandbox.exec("cat /proc/self/mountinfo")).stdout.trim().split("\n");
    const hostDisk = mountinfo
      .map((line) => {
        const [before = "", after = ""] = line.split(" - ");
        const [, , , root = "", mountPoint = ""] = before.split(" ");
        return { root, mountPoint, fsType: after.split(" ")[0] ?? "" };
      })
      .filter((m) => !VIRTUAL_FS.has(m.fsType));
    expect(hostDisk.length).toBeGreaterThan(0);
    for (const m of hostDisk) {
      const allowed = inWorkspace(m.root, m.mountPoint, ws.path) || DOCKER_FILES.test(m.root);
      expect(allowed, `${m.root} on ${m.mountPoint} (${m.fsType})`).toBe(true);
    }
  });

  it("sees its own /etc, cannot read its /etc/shadow, and sees no host process", async () => {
    using ws = makeWorkspace();
    const marker = `host-process-${randomBytes(6).toString("hex")}`;
    const hostProcess = spawn(process.execPath, ["-e", "setTimeout(() => {}, 60000)", marker], {
      stdio: "ignore",
    });
    try {
      await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
      expect((await sandbox.exec("cat /etc/hostname")).stdout).toBe(`${sandbox.containerId.slice(0, 12)}\n`);
      expect((await sandbox.exec("cat /etc/passwd")).stdout).not.toBe(readFileSync("/etc/passwd", "utf8"));
      const shadow = await sandbox.exec("cat /etc/shadow");
      expect(shadow.exitCode).not.toBe(0);
      expect(shadow.stderr).toMatch(/Permission denied/);
      const procs = await sandbox.exec(
        "cat /proc/[0-9]*/cmdline | tr '\\0' ' '; echo; ls -d /proc/[0-9]* | wc -l",
      );
      expect(procs.stdout).not.toContain(marker);
      // PID 1 is the container's own init, not the host's.
      expect((await sandbox.exec("tr '\\0' ' ' < /proc/1/cmdline")).stdout).toMatch(
        /^\/bin\/sh -c .* harness-init 2147483647 $/s,
      );
    } finally {
      hostProcess.kill("SIGKILL");
    }
  });
});
