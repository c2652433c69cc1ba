import { readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { skipDocker } from "../../support/docker-available.js";
import { makeWorkspace } from "../../support/workspace.js";

/** Lists file capabilities (the security.capability xattr) on the image's programs and libraries. */
const FILE_CAPS = `python3 - <<'EOF'
import os
found = []
for top in ("/usr", "/bin", "/sbin", "/lib", "/opt", "/etc", "/var"):
    for d, _, files in os.walk(top):
        for f in files:
            p = os.path.join(d, f)
            if os.path.islink(p):
                continue
            try:
                os.getxattr(p, "security.capability"); found.append(p)
            except OSError:
                pass
print("caps:", " ".join(found) or "none")
EOF`;

/** mount(2) itself, not util-linux's mount (which refuses non-root users before any syscall). */
const MOUNT_SYSCALL = `python3 -c 'import ctypes, os; libc = ctypes.CDLL(None, use_errno=True); os.makedirs("/tmp/m", exist_ok=True); r = libc.mount(b"none", b"/tmp/m", b"tmpfs", 0, None); print("mount(2):", r, os.strerror(ctypes.get_errno()))'`;

/**
 * Each line is one escalation attempt; `ok` means it worked. Writes to /proc/sys and cgroup files put
 * back the value already there, so even if one succeeded it would change nothing on the host.
 */
const ATTEMPTS: [string, string][] = [
  ["unshare-user", "unshare -U -r true"],
  ["unshare-mount", "unshare -m true"],
  ["unshare-net", "unshare -n true"],
  ["chroot", "chroot /tmp /bin/true"],
  ["mknod-char", "mknod /tmp/null c 1 3"],
  ["mknod-block", "mknod /workspace/disk b 8 0"],
  ["core-pattern", "cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern"],
  // cgroup v1 paths first, then v2.
  [
    "memory-limit",
    "f=/sys/fs/cgroup/memory/memory.limit_in_bytes; [ -e $f ] || f=/sys/fs/cgroup/memory.max; cat $f > $f",
  ],
  ["pids-limit", "f=/sys/fs/cgroup/pids/pids.max; [ -e $f ] || f=/sys/fs/cgroup/pids.max; cat $f > $f"],
  ["sysrq-writable", "test -w /proc/sysrq-trigger"],
  ["set-clock", "date -s @0"],
  ["set-hostname", "hostname harness-owned"],
  ["raise-core-limit", "ulimit -c unlimited"],
  ["sudo", "command -v sudo"],
];

describe.skipIf(skipDocker)("adversarial: privilege escalation", () => {
  it("has no setuid or setgid file and no file capabilities in the image", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const setuid = await sandbox.exec("find / -xdev -perm /6000 -type f 2>/dev/null; true", {
      timeoutMs: 60_000,
    });
    expect(setuid.stdout).toBe("");
    expect((await sandbox.exec(FILE_CAPS, { timeoutMs: 60_000 })).stdout).toBe("caps: none\n");
  });

  it("cannot mount, unshare, chroot, mknod, write kernel settings or its own limits", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const script = ATTEMPTS.map(
      ([name, cmd]) => `(${cmd}) >/dev/null 2>&1 && echo "${name} ok" || echo "${name} refused"`,
    );
    const result = await sandbox.exec(script.join("\n"));
    expect(result.stdout.trim().split("\n")).toEqual(ATTEMPTS.map(([name]) => `${name} refused`));
    expect((await sandbox.exec(MOUNT_SYSCALL)).stdout).toBe("mount(2): -1 Operation not permitted\n");
    expect(readdirSync(ws.path)).not.toContain("disk");
    expect((await sandbox.exec("cat /etc/hostname")).stdout).not.toContain("harness-owned");
  });

  it("finds no Docker or containerd socket, nor any unix socket file at all", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    const sockets = await sandbox.exec(
      "find / \\( -path /proc -o -path /sys \\) -prune -o -type s -print 2>/dev/null; grep -v '^Num' /proc/net/unix; true",
      { timeoutMs: 60_000 },
    );
    expect(sockets.stdout).toBe("");
  });
});
