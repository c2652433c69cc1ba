"""Allowlist mode on Kubernetes, inside the pod (started by pod-egress.ts). The pod has no network
but `lo`, and no host directory can be mounted into it, so the gateway's Unix socket cannot be
reached as on Docker: this program listens on the pod's own 127.0.0.1 (the proxy variables point at
it) and carries every connection it accepts over its own stdin and stdout, which are an exec's
streams, to the host, where each becomes a connection to the gateway. It decides nothing: every
policy is the gateway's.

Arguments: UID:GID of the sandbox user. Started as root (the machinery's identity, pod-spec.ts), it
keeps real and saved uid 0 and acts with the sandbox user's uid: no command can signal or trace it.
It is also non-dumpable, so no command reaches its descriptors through /proc/PID/fd.

Frames both ways: 1 byte kind, 4 bytes connection id, 4 bytes payload length (big-endian), payload.
To the host: `P` (id 0, payload the port, ASCII) once listening; `O` a connection was accepted; `D`
bytes from it; `E` it half-closed; `C` it is gone. From the host: `D` bytes for it; `E` the other
end half-closed; `C` close it; `A` (payload 4 bytes) the host delivered that many of its bytes.
Credit keeps memory bounded both ways: no more than WINDOW bytes of a connection are on their way to
the host unacknowledged (this side stops reading the client until `A` comes), and this side sends
`A` only as it hands the host's bytes to the client, so the host stops reading the gateway in turn.

Python 3 standard library only, one thread and one selector (a thread per connection would count
against the pod's processes). It exits when its stdin reaches end of file.
"""
import os
import selectors
import socket
import struct
import sys

HDR = struct.Struct(">cII")
ACK = struct.Struct(">I")
WINDOW = 262144
CHUNK = 65536

if os.getuid() == 0 and len(sys.argv) > 1:
    uid, _, gid = sys.argv[1].partition(":")
    if int(uid) != 0:
        os.setresgid(0, int(gid or uid), 0)
        os.setresuid(0, int(uid), 0)
try:
    import ctypes

    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
except Exception:
    pass

sel = selectors.DefaultSelector()
srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
srv.bind(("127.0.0.1", 0))
srv.listen(1024)
srv.setblocking(False)
sel.register(srv, selectors.EVENT_READ, None)
os.set_blocking(0, False)
sel.register(0, selectors.EVENT_READ, None)
conns = {}
next_id = 1


def send(kind, cid, payload=b""):
    data = HDR.pack(kind, cid, len(payload)) + payload
    while data:
        n = os.write(1, data)
        data = data[n:]


class Conn:
    def __init__(self, cid, sock):
        self.cid, self.sock = cid, sock
        self.out = b""
        self.unacked = 0
        self.client_eof = False
        self.host_eof = False
        self.shut = False
        self.mask = 0

    def update(self):
        if self.host_eof and not self.out and not self.shut:
            try:
                self.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            self.shut = True
        if self.client_eof and self.shut:
            return self.close(True)
        mask = 0
        if not self.client_eof and self.unacked < WINDOW:
            mask |= selectors.EVENT_READ
        if self.out:
            mask |= selectors.EVENT_WRITE
        if mask != self.mask:
            if not self.mask:
                sel.register(self.sock, mask, self)
            elif not mask:
                sel.unregister(self.sock)
            else:
                sel.modify(self.sock, mask, self)
            self.mask = mask

    def close(self, tell):
        if conns.pop(self.cid, None) is None:
            return
        if self.mask:
            sel.unregister(self.sock)
        self.sock.close()
        if tell:
            send(b"C", self.cid)

    def ready(self, events):
        try:
            if events & selectors.EVENT_READ:
                data = self.sock.recv(CHUNK)
                if data:
                    self.unacked += len(data)
                    send(b"D", self.cid, data)
                else:
                    self.client_eof = True
                    send(b"E", self.cid)
            if events & selectors.EVENT_WRITE:
                self.flush()
        except OSError:
            return self.close(True)
        self.update()

    def flush(self):
        try:
            n = self.sock.send(self.out)
        except (BlockingIOError, InterruptedError):
            return
        self.out = self.out[n:]
        if n:
            send(b"A", self.cid, ACK.pack(n))


def from_host(kind, cid, payload):
    conn = conns.get(cid)
    if conn is None:
        return
    if kind == b"D":
        conn.out += payload
        try:
            conn.flush()
        except OSError:
            return conn.close(True)
    elif kind == b"E":
        conn.host_eof = True
    elif kind == b"C":
        return conn.close(False)
    elif kind == b"A":
        conn.unacked -= ACK.unpack(payload)[0]
    conn.update()


send(b"P", 0, str(srv.getsockname()[1]).encode())
inbox = b""
while True:
    for key, events in sel.select():
        if key.fd == 0:
            try:
                chunk = os.read(0, CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                os._exit(0)
            inbox += chunk
            while len(inbox) >= HDR.size:
                kind, cid, size = HDR.unpack_from(inbox)
                if len(inbox) < HDR.size + size:
                    break
                payload = inbox[HDR.size : HDR.size + size]
                inbox = inbox[HDR.size + size :]
                from_host(kind, cid, payload)
        elif key.data is None:
            try:
                client, _ = srv.accept()
            except OSError:
                continue
            client.setblocking(False)
            conn = Conn(next_id, client)
            conns[next_id] = conn
            next_id += 1
            send(b"O", conn.cid)
            conn.update()
        else:
            key.data.ready(events)
