"""The relay that runs inside the sandbox in allowlist mode (started by egress-relay.ts). The
container has no network but `lo`, so the proxy variables point at this program on the container's
own 127.0.0.1, and it copies each TCP connection to the gateway's Unix socket (bind-mounted
read-only from the host). It decides nothing: every policy is the gateway's, on the host.

Arguments: the socket's path, then UID:GID of the sandbox user. Started as root (the machinery's
identity, container-spec.ts), it keeps real and saved uid 0 and acts with the sandbox user's uid,
which owns the socket: no command can signal or trace it. It is also non-dumpable, so no command
reaches its descriptors through /proc/PID/fd.

Python 3 standard library only, one thread and one selector: a thread per connection would count
against the container's pid limit, and a command that used the pids up would then silently kill the
accept loop. Each direction keeps at most one 64 KiB read in flight (a slow reader stops the other
side's reads, so memory stays bounded), and a half-close is passed on as one.

Protocol with the host: the first stdout line is `PORT <n>` (bound on port 0, so two harness
processes sharing a container each get their own) or `ERR <why>` (SOCKET_MISSING in
egress-relay-script.ts); then nothing. It exits when its stdin reaches end of file: the host keeps
it open for as long as it uses the sandbox.
"""
import errno
import os
import selectors
import socket
import sys
import time

SOCKET_MISSING = "ERR socket-missing"
path = sys.argv[1]
if os.getuid() == 0 and len(sys.argv) > 2:
    uid, _, gid = sys.argv[2].partition(":")
    if int(uid) != 0:
        os.setresgid(0, int(gid or uid), 0)
        os.setresuid(0, int(uid), 0)
try:
    import ctypes

    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
except Exception:
    pass
try:
    os.stat(path)
except OSError as e:
    print("%s: %s" % (SOCKET_MISSING, e.strerror), flush=True)
    sys.exit(3)
LIMIT = 65536
sel = selectors.DefaultSelector()
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.bind(("127.0.0.1", 0))
srv.listen(1024)
srv.setblocking(False)
sel.register(srv, selectors.EVENT_READ, None)
sel.register(0, selectors.EVENT_READ, None)
print("PORT %d" % srv.getsockname()[1], flush=True)
waiting = []

class Side:
    def __init__(self, pair, sock):
        self.pair, self.sock, self.out, self.eof, self.shut, self.mask = pair, sock, b"", False, False, 0

class Pair:
    def __init__(self, client):
        self.a = Side(self, client)
        self.b = Side(self, socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
        self.b.sock.setblocking(False)
        self.a.peer, self.b.peer = self.b, self.a
        self.connected = False
        self.deadline = time.monotonic() + 5
        self.dead = False

    def connect(self):
        try:
            self.b.sock.connect(path)
        except BlockingIOError:
            return False
        except OSError as e:
            if e.errno != errno.EISCONN:
                self.close()
                return True
        self.connected = True
        self.update()
        return True

    def close(self):
        if self.dead:
            return
        self.dead = True
        for s in (self.a, self.b):
            if s.mask:
                sel.unregister(s.sock)
            s.sock.close()

    def update(self):
        if self.dead:
            return
        for s in (self.a, self.b):
            if s.eof and not s.peer.out and not s.peer.shut:
                try:
                    s.peer.sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                s.peer.shut = True
        if self.a.shut and self.b.shut:
            return self.close()
        for s in (self.a, self.b):
            mask = 0
            if self.connected and not s.eof and len(s.peer.out) < LIMIT:
                mask |= selectors.EVENT_READ
            if s.out:
                mask |= selectors.EVENT_WRITE
            if mask != s.mask:
                if not s.mask:
                    sel.register(s.sock, mask, s)
                elif not mask:
                    sel.unregister(s.sock)
                else:
                    sel.modify(s.sock, mask, s)
                s.mask = mask

    def ready(self, s, events):
        try:
            if events & selectors.EVENT_READ:
                data = s.sock.recv(LIMIT)
                if data:
                    s.peer.out += data
                    flush(s.peer)
                else:
                    s.eof = True
            if events & selectors.EVENT_WRITE:
                flush(s)
        except OSError:
            return self.close()
        self.update()

def flush(s):
    try:
        n = s.sock.send(s.out)
        s.out = s.out[n:]
    except (BlockingIOError, InterruptedError):
        pass

while True:
    timeout = 0.02 if waiting else None
    for key, events in sel.select(timeout):
        if key.fd == 0:
            if not os.read(0, 65536):
                os._exit(0)
        elif key.data is None:
            try:
                client, _ = srv.accept()
            except OSError:
                continue
            client.setblocking(False)
            pair = Pair(client)
            if not pair.connect():
                waiting.append(pair)
        else:
            key.data.pair.ready(key.data, events)
    if waiting:
        now = time.monotonic()
        still = []
        for pair in waiting:
            if pair.connect():
                continue
            if now > pair.deadline:
                pair.close()
            else:
                still.append(pair)
        waiting = still
