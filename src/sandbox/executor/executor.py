"""harness's executor: one process per harness process and sandbox, started by a single exec, that
runs every later command without another trip through the container runtime (60-110 ms each).
Python 3 standard library only, one thread, one selector. The host side is executor.ts; the frame
format and kinds are shared with executor-protocol.ts (a unit test checks that both agree).

Arguments (after the loader's own): UID:GID of the commands, the name of the env variable that tags
each command's processes.

Who can reach it. Where the engine lets the machinery run as root (Docker), the exec starts as uid 0
holding only CAP_SETUID and CAP_SETGID, and the executor keeps real and saved uid 0 while it acts
with the commands' uid as its effective and filesystem uid. So:
- a command (all of its uids the workspace owner's, no capabilities, no_new_privs) can neither
  signal it (the kernel compares with the target's real and saved uid) nor ptrace it, nor open its
  /proc/PID/fd, mem or environ; it is also non-dumpable;
- the executor itself can read its commands' /proc entries and signal them as their own uid would,
  with no capability for either (no CAP_KILL, no CAP_SYS_PTRACE);
- each command is forked as root, and only then drops to the workspace owner (groups, gids, uids)
  and execs: the next call's process waits as root (`spare`), out of every command's reach, and is
  handed its command over a socket.
Where it cannot (Podman, whose tmpfs options follow the container's user), it runs as the commands'
uid: non-dumpable, so its descriptors and memory stay closed, but a command can signal it.

Each command also gets a Landlock domain of its own, where the kernel has Landlock: a process in one
call's domain cannot ptrace, or open /proc/PID/mem of, a process in another call's domain, so a job
one call leaves running cannot take over a later call's shell and answer for it. The ruleset and the
entering are own-domain.py's (`harness shell` enters one the same way), which the loader runs first
as the module `own_domain`.

The channel: the host speaks to the executor over the exec's own stdin and stdout; a command gets
fresh pipes and /dev/null for stdin, never those, and no other descriptor (python opens every
descriptor close-on-exec). Every frame is length-prefixed and carries the call's nonce, which lives
only in the host's and the executor's memory, so command output is only ever payload. The end of a
call is the command's shell being reaped (waitpid), not anything printed.

Each command runs as `bash -c` (sh where there is no bash) in its own session, as a child subreaper
(`PR_SET_CHILD_SUBREAPER`): whatever it starts, `setsid` and double forks included, stays in its
process tree while it runs, so the kill walks that tree and never touches another harness process's
command. Its EXIT trap stops the shell (`kill -STOP $$`, while its parent is still this executor) so
that its cwd can be read from /proc before it is let go.

Frames both ways: 1 byte kind, 16 bytes nonce (ASCII hex), 4 bytes big-endian payload length,
payload. Host to executor: `R` run (JSON request), `K` kill (JSON `{grace}`), `C` census (is any
process of the commands' uid left in the container?, answered with a `C` frame, JSON `{alone}`).
Executor to host: `H` hello (JSON, nonce all zeros), `S` started (JSON: pid, start time), `o`/`e`
stdout/stderr bytes, `X` end (JSON: exit code, OOM kills, background count, cwd, survivors), `F`
could not start (JSON: why), `B` bye (nonce all zeros, empty: it is about to exit). The end of its
stdin ends the executor, after killing any command still running; its bye lets the host go on without
waiting for the engine to close the exec's stream.
"""

import collections
import json
import os
import selectors
import signal
import socket
import struct
import sys
import time

from own_domain import enter_own_domain, landlock_ruleset, libc, prctl

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3
PR_SET_CHILD_SUBREAPER = 36

HDR = struct.Struct(">c16sI")
CHUNK = 65536
HIGH = 262144
ZERO = b"0" * 16

def make_undumpable():
    prctl(PR_SET_DUMPABLE, 0)
    return libc is not None and prctl(PR_GET_DUMPABLE, 0) == 0


def parse_ids(text):
    uid, _, gid = text.partition(":")
    return int(uid), int(gid or uid)


# python3 -c LOADER NAME UID:GID TAG_VAR: sys.argv is ["-c", NAME, UID:GID, TAG_VAR].
UID, GID = parse_ids(sys.argv[2]) if len(sys.argv) > 2 else (os.getuid(), os.getgid())
TAG = sys.argv[3] if len(sys.argv) > 3 else "HARNESS_EXEC"
# Root machinery: real and saved uid 0 (out of the commands' reach), effective uid the commands'.
ROOT = os.getuid() == 0 and UID != 0
if ROOT:
    os.setresgid(0, GID, 0)
    os.setresuid(0, UID, 0)
# After the ids changed (which also resets it), never before.
protected = make_undumpable()


RULESET = landlock_ruleset()

# The shell stops itself as it exits, so that its cwd can be read; only while its parent is this
# executor: a shell whose executor is gone would otherwise stay stopped for good, under PID 1.
WRAP = (
    "trap 'IFS=\" \"; read -r x < /proc/$$/stat; set -- $x; [ \"$4\" = %d ] && kill -STOP $$' EXIT; "
    'eval "$1"'
) % os.getpid()


def find_shell():
    for d in os.environ.get("PATH", "/usr/bin:/bin").split(":") + ["/bin", "/usr/bin"]:
        p = os.path.join(d or ".", "bash")
        if d.startswith("/") and os.access(p, os.X_OK):
            return p
    return "/bin/sh"


SHELL = find_shell()
SHELLB = SHELL.encode()
WRAPB = WRAP.encode()
ENVB = dict(os.environb)


class Outbox:
    """Frames waiting for the host, as the chunks they were read in: written with writev, never copied."""

    def __init__(self):
        self.chunks = collections.deque()
        self.size = 0

    def add(self, b):
        self.chunks.append(b)
        self.size += len(b)

    def flush(self):
        while self.chunks:
            n = os.writev(1, [self.chunks[i] for i in range(min(64, len(self.chunks)))])
            self.size -= n
            while n:
                c = self.chunks[0]
                if n >= len(c):
                    n -= len(c)
                    self.chunks.popleft()
                else:
                    self.chunks[0] = memoryview(c)[n:]
                    n = 0

    def clear(self):
        self.chunks.clear()
        self.size = 0


out = Outbox()
sel = selectors.DefaultSelector()
calls = {}
pids = {}
draining = {}
watched = set()
paused = [False]


def watch(fd, data):
    if fd not in watched:
        sel.register(fd, selectors.EVENT_READ, data)
        watched.add(fd)


def unwatch(fd):
    if fd in watched:
        sel.unregister(fd)
        watched.discard(fd)


def send(kind, nonce, payload):
    out.add(HDR.pack(kind, nonce, len(payload)))
    # Never an empty chunk: writev would write none of it, and flush would wait on it forever.
    if payload:
        out.add(payload)


def send_json(kind, nonce, obj):
    send(kind, nonce, json.dumps(obj).encode())


def nonblock(fd):
    os.set_blocking(fd, False)


def oom():
    for f in ("/sys/fs/cgroup/memory/memory.oom_control", "/sys/fs/cgroup/memory.events"):
        try:
            with open(f) as h:
                for line in h:
                    k, _, n = line.partition(" ")
                    if k == "oom_kill":
                        return int(n)
            return 0
        except (OSError, ValueError):
            continue
    return 0


def stat(pid):
    """(state, ppid, session, start time) from /proc/PID/stat, or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as h:
            s = h.read()
    except OSError:
        return None
    f = s[s.rfind(b")") + 2 :].split()
    return f[0], int(f[1]), int(f[3]), int(f[19])


def real_uid(pid):
    """The real uid in /proc/PID/status (readable by anyone, whatever the process did to itself)."""
    try:
        with open("/proc/%d/status" % pid, "rb") as h:
            for line in h:
                if line.startswith(b"Uid:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def commands_process(pid):
    """Whether a process belongs to the commands (not to PID 1's machinery): in the root model, any
    process whose real uid is not 0, since no command can make a process of uid 0."""
    return real_uid(pid) != 0 if ROOT else pid != 1


def background():
    """How many processes PID 1 adopted that are the commands' (jobs left running)."""
    try:
        with open("/proc/1/task/1/children") as h:
            kids = [int(p) for p in h.read().split()]
    except OSError:
        kids = [int(d) for d in os.listdir("/proc") if d.isdigit() and d != "1" and (stat(int(d)) or (0, 0))[1] == 1]
    if ROOT:
        return sum(1 for p in kids if real_uid(p) not in (None, 0) and (stat(p) or (b"Z",))[0] != b"Z")
    # Same-uid machinery: every adopted process but PID 1's own sleep.
    return max(0, len(kids) - 1)


def become_command(job):
    """In a forked child: drop to the commands' uid, enter a Landlock domain of its own and exec the
    shell. job: start dir, workspace dir, command, then KEY=value entries, NUL-separated. Never returns."""
    try:
        f = job.split(b"\0")
        if ROOT:
            os.seteuid(0)
            os.setgroups([])
            os.setresgid(GID, GID, GID)
            os.setresuid(UID, UID, UID)
        enter_own_domain(RULESET)
        for d in (f[0], f[1], b"/"):
            try:
                os.chdir(d)
                break
            except OSError:
                pass
        env = dict(ENVB)
        for kv in f[3:]:
            k, _, v = kv.partition(b"=")
            env[k] = v
        os.execve(SHELLB, [SHELLB, b"-c", WRAPB, b"bash", f[2]], env)
    except BaseException:
        pass
    os._exit(127)


def wait_for_job(ctl):
    """A spare: wait (still as this executor's identity) for a job, 4 bytes of length first."""
    b = b""
    try:
        while True:
            c = os.read(ctl, CHUNK)
            if not c:
                os._exit(0)
            b += c
            if len(b) >= 4 and len(b) >= 4 + struct.unpack(">I", b[:4])[0]:
                break
    except BaseException:
        os._exit(0)
    os.close(ctl)
    return b[4 : 4 + struct.unpack(">I", b[:4])[0]]


def child(o_w, e_w, job=None, ctl=None, parents=()):
    """In a forked child: become the command's shell now (job given), or as a spare once handed one.
    parents: the executor's ends of this child's pipes and socket, closed here at once: a spare that
    held its socket's other end would never see the executor go, and outlive it for good."""
    try:
        for fd in parents:
            os.close(fd)
        # python ignores these; an ignored signal stays ignored across exec, and "yes | head" must
        # end by SIGPIPE as in any shell.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        os.setsid()
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        nul = os.open("/dev/null", os.O_RDONLY)
        os.dup2(nul, 0)
        os.dup2(o_w, 1)
        os.dup2(e_w, 2)
        if ctl is not None:
            job = wait_for_job(ctl)
    except BaseException:
        os._exit(127)
    become_command(job)


def spawn(job=None):
    """Forks a child for a command (job given): (pid, stdout, stderr); or a spare that waits for one:
    (pid, stdout, stderr, ctl)."""
    fds = []
    try:
        o_r, o_w = os.pipe()
        fds += [o_r, o_w]
        e_r, e_w = os.pipe()
        fds += [e_r, e_w]
        if job is None:
            c_r, c_w = (s.detach() for s in socket.socketpair())
            fds += [c_r, c_w]
        pid = os.fork()
    except OSError:
        for fd in fds:
            os.close(fd)
        raise
    if pid == 0:
        if job is None:
            child(o_w, e_w, None, c_r, (o_r, e_r, c_w))
        child(o_w, e_w, job, None, (o_r, e_r))
    os.close(o_w)
    os.close(e_w)
    if job is not None:
        return pid, o_r, e_r
    os.close(c_r)
    return pid, o_r, e_r, c_w


# The next command's process, forked ahead of time: forking this python and the copy-on-write faults
# that follow cost milliseconds a call; with a spare they are paid between calls. It waits as this
# executor's identity (out of the commands' reach, in the root model) until it is handed a command.
spare = [None]


def take_spare(job):
    """Hands the job to the spare: (pid, stdout, stderr), or None when there is no usable spare."""
    sp = spare[0]
    spare[0] = None
    if sp is None:
        return None
    pid, o_r, e_r, c_w = sp
    st = stat(pid)
    ok = st is not None and st[0] not in (b"Z", b"T", b"t")
    if ok:
        try:
            msg = struct.pack(">I", len(job)) + job
            n = 0
            while n < len(msg):
                n += os.write(c_w, msg[n:])
        except OSError:
            ok = False
    os.close(c_w)
    if ok:
        return pid, o_r, e_r
    # Stopped or killed (possible only where the machinery shares the commands' uid): a fresh fork.
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    os.close(o_r)
    os.close(e_r)
    return None


def make_spare():
    if spare[0] is None:
        try:
            spare[0] = spawn()
        except OSError:
            pass


class Call:
    def __init__(self, nonce, req):
        self.nonce, self.req = nonce, req
        self.pid = None
        self.status = None
        self.cwd = None
        self.fds = {}
        self.known = {}
        self.kill = None
        self.oom0 = oom()

    def start(self):
        r = self.req
        env = [kv.encode() for kv in r.get("env", [])] + [("%s=%s" % (TAG, r["tag"])).encode()]
        self.tag = env[-1]
        job = b"\0".join([r["start"].encode(), r["workdir"].encode(), r["command"].encode()] + env)
        handed = take_spare(job)
        if handed is not None:
            self.pid, o_r, e_r = handed
        else:
            try:
                self.pid, o_r, e_r = spawn(job)
            except OSError as e:
                send_json(b"F", self.nonce, {"error": "%s: %s" % (type(e).__name__, e.strerror or e)})
                return False
        st = stat(self.pid)
        self.t0 = st[3] if st else 0
        self.known[self.pid] = self.t0
        for fd, name in ((o_r, b"o"), (e_r, b"e")):
            nonblock(fd)
            self.fds[fd] = name
            if not paused[0]:
                watch(fd, ("pipe", self))
        send_json(b"S", self.nonce, {"pid": self.pid, "start": self.t0})
        return True

    def read(self, fd, limit):
        n = 0
        while n < limit:
            try:
                b = os.read(fd, CHUNK)
            except BlockingIOError:
                return
            except OSError:
                b = b""
            if not b:
                unwatch(fd)
                os.close(fd)
                del self.fds[fd]
                return
            send(self.fds[fd], self.nonce, b)
            n += len(b)

    def targets(self):
        """The command's processes, by what they are (pid and start time), never by their names: the
        shell, what it started (its tree: it is a subreaper), and what carries the command's tag."""
        procs = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                p = int(d)
                st = stat(p)
                if st and st[0] != b"Z":
                    procs[p] = st
        me = os.getpid()
        alive = {p: t for p, t in self.known.items() if p in procs and procs[p][3] == t}
        for p, st in procs.items():
            if p not in alive and p != 1 and p != me and st[3] >= self.t0:
                if st[1] == self.pid or self.tagged(p):
                    alive[p] = st[3]
        grew = True
        while grew:
            grew = False
            for p, st in procs.items():
                if p not in alive and p != 1 and p != me and st[1] in alive:
                    alive[p] = st[3]
                    grew = True
        alive = {p: t for p, t in alive.items() if p == self.pid or commands_process(p)}
        self.known.update(alive)
        return alive

    def tagged(self, pid):
        try:
            with open("/proc/%d/environ" % pid, "rb") as h:
                return self.tag in h.read().split(b"\0")
        except OSError:
            return False

    def signal_all(self, sig):
        t = self.targets()
        for p in t:
            try:
                os.kill(p, sig)
            except OSError:
                pass
        return t

    def begin_kill(self, grace):
        if self.kill is not None or self.status is not None:
            return
        self.signal_all(signal.SIGTERM)
        self.signal_all(signal.SIGCONT)
        self.kill = {"until": time.monotonic() + grace, "rounds": 0, "left": []}

    def step_kill(self):
        k = self.kill
        if k is None or k.get("done"):
            return
        if time.monotonic() < k["until"] and self.signal_all(0):
            return
        t = self.signal_all(signal.SIGSTOP)
        for _ in range(20):
            t2 = self.signal_all(signal.SIGSTOP)
            if set(t2) == set(t):
                break
            t = t2
        self.signal_all(signal.SIGKILL)
        k["rounds"] += 1
        left = [p for p in self.targets() if p != self.pid or self.status is None]
        if not left or k["rounds"] >= 5:
            k["done"] = True
            k["left"] = [p for p in left if p != self.pid]

    def reaped(self, status):
        self.status = status

    def finish(self):
        for fd in list(self.fds):
            self.read(fd, HIGH)
        for fd in list(self.fds):
            unwatch(fd)
            draining[fd] = True
            watch(fd, ("drain", None))
        self.fds.clear()
        s = self.status
        code = os.WEXITSTATUS(s) if os.WIFEXITED(s) else 128 + os.WTERMSIG(s)
        cwd = self.cwd
        if cwd is not None and (not cwd.startswith("/") or "\n" in cwd or len(cwd) > 4096):
            cwd = None
        send_json(
            b"X",
            self.nonce,
            {
                "code": code,
                "oom": oom() - self.oom0,
                "background": background(),
                "cwd": cwd,
                "survivors": self.kill["left"] if self.kill else [],
            },
        )
        del calls[self.nonce]
        pids.pop(self.pid, None)


def read_cwd(pid):
    """The stopped shell's working directory. Acting as the commands' uid, the executor may read it
    on Linux, which checks the filesystem uid. gVisor checks the real uid and lets only an ancestor
    look, so there the executor takes the commands' uid and gid as its real ones for that one readlink
    (its saved ids, 0, bring it back): for that moment a command's process could signal it, never trace it."""
    path = "/proc/%d/cwd" % pid
    try:
        return os.readlink(path)
    except PermissionError:
        if not ROOT:
            return None
    except OSError:
        return None
    try:
        os.setresgid(GID, -1, -1)
        os.setresuid(UID, -1, -1)
        try:
            return os.readlink(path)
        finally:
            os.setresuid(0, -1, -1)
            os.setresgid(0, -1, -1)
    except OSError:
        return None


def reap():
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG | os.WUNTRACED)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if spare[0] is not None and pid == spare[0][0] and not os.WIFSTOPPED(status):
            # The spare ended before it got a command: drop it, a new one is made when idle.
            for fd in spare[0][1:]:
                os.close(fd)
            spare[0] = None
            continue
        call = pids.get(pid)
        if os.WIFSTOPPED(status):
            if call is not None and call.kill is None:
                call.cwd = read_cwd(pid)
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
            continue
        if call is not None:
            call.reaped(status)


def alone():
    """Whether no process of the commands is left in the container (the end of a run asks). Only the
    root model can tell them apart from the machinery by what they are; otherwise the host asks the
    engine."""
    if not ROOT:
        return False
    for d in os.listdir("/proc"):
        if d.isdigit() and d != "1":
            st = stat(int(d))
            if st is not None and st[0] != b"Z" and commands_process(int(d)):
                return False
    return True


inbuf = bytearray()


def on_input():
    try:
        b = os.read(0, CHUNK)
    except BlockingIOError:
        return True
    if not b:
        return False
    inbuf.extend(b)
    while len(inbuf) >= HDR.size:
        kind, nonce, n = HDR.unpack_from(inbuf)
        if len(inbuf) < HDR.size + n:
            break
        body = bytes(inbuf[HDR.size : HDR.size + n])
        del inbuf[: HDR.size + n]
        if kind == b"R" and nonce not in calls:
            call = Call(nonce, json.loads(body))
            if call.start():
                calls[nonce] = call
                pids[call.pid] = call
        elif kind == b"K" and nonce in calls:
            calls[nonce].begin_kill(float(json.loads(body).get("grace", 2)))
        elif kind == b"C":
            send_json(b"C", nonce, {"alone": alone()})
    return True


def main():
    rfd, wfd = os.pipe()
    nonblock(rfd)
    nonblock(wfd)
    signal.set_wakeup_fd(wfd)
    signal.signal(signal.SIGCHLD, lambda *a: None)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    nonblock(0)
    nonblock(1)
    sel.register(0, selectors.EVENT_READ, ("in", None))
    sel.register(rfd, selectors.EVENT_READ, ("sig", None))
    send_json(
        b"H",
        ZERO,
        {"pid": os.getpid(), "protected": protected, "shell": SHELL, "root": ROOT, "landlock": RULESET is not None},
    )
    writing = False
    alive = True
    broken = [False]
    while alive or calls:
        if broken[0]:
            out.clear()
        if out.size and not writing:
            sel.register(1, selectors.EVENT_WRITE, ("out", None))
            writing = True
        elif not out.size and writing:
            sel.unregister(1)
            writing = False
        full = out.size >= HIGH
        if full != paused[0]:
            paused[0] = full
            for c in calls.values():
                for fd in c.fds:
                    if full:
                        unwatch(fd)
                    else:
                        watch(fd, ("pipe", c))
        busy = any(c.kill is not None for c in calls.values())
        for key, _ in sel.select(0.05 if busy else None):
            what, call = key.data
            if what == "in":
                if not on_input():
                    sel.unregister(0)
                    alive = False
                    for c in calls.values():
                        c.begin_kill(0)
            elif what == "sig":
                try:
                    while os.read(rfd, 512):
                        pass
                except OSError:
                    pass
                reap()
            elif what == "pipe":
                call.read(key.fd, HIGH)
            elif what == "drain":
                try:
                    b = os.read(key.fd, CHUNK)
                except BlockingIOError:
                    continue
                except OSError:
                    b = b""
                if not b:
                    unwatch(key.fd)
                    os.close(key.fd)
                    draining.pop(key.fd, None)
            elif what == "out":
                try:
                    out.flush()
                except BlockingIOError:
                    pass
                except OSError:
                    # Nobody reads any more (harness is gone): finish the kills, say nothing.
                    out.clear()
                    broken[0] = True
        reap()
        for c in list(calls.values()):
            c.step_kill()
            if c.status is not None and (c.kill is None or c.kill.get("done")):
                c.finish()
        # Between calls, once what is due to the host is written: the next call's process, forked
        # ahead (forked during a call, it competed with the command and delayed its end).
        if alive and spare[0] is None and not calls and not out.size:
            make_spare()
    if spare[0] is not None:
        os.close(spare[0][3])
    if not broken[0]:
        send(b"B", ZERO, b"")
        os.set_blocking(1, True)
        try:
            out.flush()
        except OSError:
            pass


main()
