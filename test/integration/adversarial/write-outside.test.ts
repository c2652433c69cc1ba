import { randomBytes } from "node:crypto";
import { existsSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { skipDocker } from "../../support/docker-available.js";
import { makeWorkspace, TEST_UID } from "../../support/workspace.js";

/** Every place the sandbox user can write; all but /workspace are tmpfs that end with the container. */
const WRITABLE = ["/dev/mqueue", "/dev/shm", "/home/sandbox", "/run/harness", "/tmp", "/workspace"];

describe.skipIf(skipDocker)("adversarial: writing outside the workspace", () => {
  it("can write nowhere but the workspace and a few size-limited tmpfs", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    // access(2) says what a write would meet: read-only mounts and permissions both count.
    const found = await sandbox.exec(
      "find / \\( -path /proc -o -path /sys \\) -prune -o \\( -type d -o -type f \\) -writable -print 2>/dev/null; true",
      { timeoutMs: 60_000 },
    );
    const outside = found.stdout
      .split("\n")
      .filter((p) => p !== "" && !WRITABLE.some((w) => p === w || p.startsWith(`${w}/`)));
    expect(outside).toEqual([]);
    const dirs = (
      await sandbox.exec("for d in / /etc /usr/local/bin /var/tmp /opt /root; do touch $d/x 2>&1; done")
    ).stdout;
    expect(dirs.match(/Read-only file system|Permission denied/g)).toHaveLength(6);
  });

  it("leaves nothing on the host from writes to its tmpfs; workspace writes arrive as the user's", async () => {
    using ws = makeWorkspace();
    const name = `planted-${randomBytes(6).toString("hex")}`;
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const wrote = await sandbox.exec(
      `for d in /tmp /dev/shm /home/sandbox /run/harness /workspace; do echo x > $d/${name} || echo FAILED $d; done`,
    );
    expect(wrote.stdout).toBe("");
    for (const hostDir of ["/tmp", "/dev/shm", homedir(), "/run"]) {
      expect(existsSync(join(hostDir, name)), hostDir).toBe(false);
    }
    expect(statSync(join(ws.path, name)).uid).toBe(TEST_UID);
  });
});
