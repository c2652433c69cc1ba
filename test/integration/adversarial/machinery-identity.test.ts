/**
 * Issue 19, findings 1–3: harness's machinery in the container (PID 1 and its child, the executor,
 * the next call's process waiting for its command, the allowlist relay) under an identity no command
 * can touch, and each call in a Landlock domain of its own. On the old code the machinery shared the
 * commands' uid: a command could ptrace PID 1's `sleep` and the pre-started shell, and write into
 * that shell's output; each test here failed there.
 */
import { setTimeout as sleep } from "node:timers/promises";
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { skipDocker } from "../../support/docker-available.js";
import { makeWorkspace } from "../../support/workspace.js";

const docker = new Docker();

/**
 * Python run by a command: for every process of the container that is not the command's own (its
 * uid differs, or it is not in this process's ancestry), every way in a process of the command's
 * uid has, each printed as REACHED when it worked; then a line per machinery process it looked at.
 */
const PROBE = String.raw`
import ctypes, os, signal
libc = ctypes.CDLL(None, use_errno=True)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
me = os.getpid()
mine = set()
p = me
while p > 1:
    mine.add(p)
    p = int(open("/proc/%d/stat" % p).read().rsplit(")", 1)[1].split()[1])
seen = []
for d in os.listdir("/proc"):
    if not d.isdigit() or int(d) in mine:
        continue
    pid = int(d)
    try:
        cmd = open("/proc/%d/cmdline" % pid, "rb").read().replace(b"\0", b" ").replace(b"\n", b" ").decode().strip()
        uid = [l.split()[1] for l in open("/proc/%d/status" % pid) if l.startswith("Uid:")][0]
    except OSError:
        continue
    seen.append("%d uid=%s %s" % (pid, uid, cmd))
    if libc.ptrace(16, pid, 0, 0) == 0:
        print("REACHED ptrace", pid, cmd)
        libc.ptrace(17, pid, 0, 0)
    for sig in (0, signal.SIGSTOP, signal.SIGCONT):
        try:
            os.kill(pid, sig)
            print("REACHED signal", int(sig), pid, cmd)
        except OSError:
            pass
    for f in ("fd", "fd/0", "fd/1", "fd/2", "mem", "environ", "cwd"):
        try:
            if f == "fd" or f == "cwd":
                os.listdir("/proc/%d/%s" % (pid, f))
            else:
                os.close(os.open("/proc/%d/%s" % (pid, f), os.O_RDONLY if f in ("mem", "environ") else os.O_WRONLY | os.O_NONBLOCK))
            print("REACHED", f, pid, cmd)
        except OSError:
            pass
    buf = ctypes.create_string_buffer(8)
    local = iovec(ctypes.cast(buf, ctypes.c_void_p), 8)
    remote = iovec(0x400000, 8)
    if libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) >= 0 or ctypes.get_errno() not in (1, 13):
        print("REACHED process_vm_readv", pid, ctypes.get_errno(), cmd)
    if libc.process_vm_writev(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) >= 0 or ctypes.get_errno() not in (1, 13):
        print("REACHED process_vm_writev", pid, ctypes.get_errno(), cmd)
for s in seen:
    print("SEEN", s)
`;

describe.skipIf(skipDocker)("harness's machinery out of the commands' uid", { timeout: 120_000 }, () => {
  it("a command can reach none of PID 1, its child, the executor, the waiting next call or the relay", async () => {
    using ws = makeWorkspace();
    // Allowlist mode, so that the relay runs too; nothing is fetched.
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      egress: { allowHosts: ["example.invalid"] },
    });
    // Probed between calls, by a job the first call leaves, while the next call's process waits.
    const probe = `import os, time\nwhile not os.path.exists("/tmp/go"): time.sleep(0.01)\ntime.sleep(0.7)\n${PROBE}`;
    await sandbox.exec(
      `cat > /tmp/probe.py <<'PY'\n${probe}\nPY\n(setsid python3 /tmp/probe.py > /tmp/probe.out 2>&1 &)`,
    );
    await sandbox.exec("touch /tmp/go");
    await sleep(2_500);
    const result = await sandbox.exec("cat /tmp/probe.out");
    expect(result.exitCode).toBe(0);
    expect(result.stdout).not.toContain("REACHED");
    expect(result.stdout).not.toContain("Traceback");
    const seen = result.stdout.split("\n").filter((line) => line.startsWith("SEEN"));
    // PID 1, its sleep, the executor, the waiting process (a fork of the executor) and the relay.
    expect(seen.some((line) => /^SEEN 1 uid=0 /.test(line))).toBe(true);
    expect(seen.some((line) => /uid=0 sleep 2147483647/.test(line))).toBe(true);
    expect(
      seen.filter((line) => /uid=0 python3 .* harness-executor \d+:\d+ HARNESS_EXEC$/.test(line)).length,
    ).toBe(2);
    expect(seen.some((line) => /uid=0 python3 -I -S -c .*\.sock \d+:\d+$/.test(line))).toBe(true);
    // Each was looked at as a process of another uid than the command's.
    expect(seen.every((line) => /uid=0 /.test(line))).toBe(true);
    // And the machinery still works.
    expect(await sandbox.exec("echo still; exit 3")).toMatchObject({ stdout: "still\n", exitCode: 3 });
  });

  it("a job left by one call cannot trace or write into later calls' processes, nor answer for them", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    // For 6 s: attach to, and write memory of, every process of its uid outside its own tree, and
    // note each success in /tmp/hits (the old pre-started shell was one: same uid, no domain).
    const job = String.raw`
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
me = os.getpid()
end = time.time() + 6
hits = open("/tmp/hits", "a")
while time.time() < end:
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in (me, 1):
            continue
        pid = int(d)
        if libc.ptrace(16, pid, 0, 0) == 0:
            hits.write("ptrace %d\n" % pid); hits.flush()
            libc.ptrace(17, pid, 0, 0)
        try:
            os.close(os.open("/proc/%d/mem" % pid, os.O_RDWR))
            hits.write("mem %d\n" % pid); hits.flush()
        except OSError:
            pass
    time.sleep(0.001)
`;
    await sandbox.exec(`(setsid python3 -c '${job.replaceAll("'", "'\\''")}' >/dev/null 2>&1 &)`);
    for (let i = 0; i < 12; i++) {
      await sleep(150);
      const r = await sandbox.exec(`echo real-${i}; false`);
      expect(r).toMatchObject({ stdout: `real-${i}\n`, exitCode: 1 });
    }
    await sleep(6_500);
    const hits = await sandbox.exec("cat /tmp/hits 2>/dev/null; true");
    expect(hits.stdout).toBe("");
  });

  it("between calls, nothing of harness's has a descriptor a job could write the next call's output into", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    // The job waits for /tmp/go, lets that call end (the next call's process is then made), then
    // writes into descriptors 1 and 2 of every process it can open, once, and exits.
    const job = String.raw`
import os, time
while not os.path.exists("/tmp/go"):
    time.sleep(0.01)
time.sleep(0.7)
me = os.getpid()
for d in os.listdir("/proc"):
    if d.isdigit() and int(d) not in (me, 1):
        for f in (1, 2):
            try:
                fd = os.open("/proc/%s/fd/%d" % (d, f), os.O_WRONLY | os.O_NONBLOCK)
                os.write(fd, b"INJECTED\n")
                os.close(fd)
            except OSError:
                pass
`;
    await sandbox.exec(`(setsid python3 -c '${job.replaceAll("'", "'\\''")}' >/dev/null 2>&1 &)`);
    await sleep(300);
    await sandbox.exec("touch /tmp/go");
    await sleep(1_500);
    const r = await sandbox.exec("echo real");
    expect(r).toMatchObject({ stdout: "real\n", stderr: "", exitCode: 0 });
  });

  it("the end of a run ends a job that calls itself PID 1's sleep, found by its uid, not its name", async () => {
    using ws = makeWorkspace();
    const sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: false });
    const id = sandbox.containerId;
    try {
      await sandbox.exec(
        `(setsid bash -c 'exec -a "sleep 2147483647" sleep 1000' >/dev/null 2>&1 &); (setsid bash -c 'sleep 3; touch /workspace/planted' >/dev/null 2>&1 &)`,
      );
      await sandbox.stop();
      const top = (await docker.getContainer(id).top({ ps_args: "-o pid,ruid,args" })) as {
        Processes?: string[][];
      };
      const ruids = (top.Processes ?? []).map((row) => row[1]);
      expect(ruids.every((ruid) => ruid === "0")).toBe(true);
      await sleep(4_000);
      const { existsSync } = await import("node:fs");
      expect(existsSync(`${ws.path}/planted`)).toBe(false);
    } finally {
      await docker
        .getContainer(id)
        .remove({ force: true })
        .catch(() => {});
    }
  });
});
