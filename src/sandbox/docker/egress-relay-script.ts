/**
 * The relay that runs inside the sandbox in allowlist mode: the container has no network but `lo`,
 * so the proxy variables point at this program on the container's own 127.0.0.1, and it copies each
 * TCP connection to the gateway's Unix socket (bind-mounted read-only from the host). It decides
 * nothing: every policy is the gateway's, on the host.
 *
 * Python 3 standard library only, one thread and one selector: a thread per connection would count
 * against the container's pid limit, and a command that used the pids up would then silently kill
 * the relay's accept loop. Each direction keeps at most one 64 KiB read in flight (a slow reader
 * stops the other side's reads, so memory stays bounded), and a half-close is passed on as one.
 *
 * Protocol with the host: the first stdout line is `PORT <n>` (bound on port 0, so two harness
 * processes sharing a container each get their own) or `ERR <why>`; then nothing. It exits when its
 * stdin reaches end of file: the host keeps it open for as long as it uses the sandbox, so the relay
 * ends when harness closes it or dies. It makes itself non-dumpable so that a command (same uid)
 * cannot reach its descriptors through /proc/PID/fd.
 */

/** Where the gateway's socket directory appears inside the container (read-only). */
export const EGRESS_MOUNT = "/run/harness-egress";

/** The relay's first line when the image has no python3. */
export const NO_PYTHON = "ERR no-python3";

/** How the relay's first line starts when the container does not see the gateway's socket. */
export const SOCKET_MISSING = "ERR socket-missing";

export const RELAY_SCRIPT = `
import errno, os, selectors, socket, sys, time
path = sys.argv[1]
try:
    import ctypes
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
except Exception:
    pass
try:
    os.stat(path)
except OSError as e:
    print("${SOCKET_MISSING}: %s" % e.strerror, flush=True)
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
`;

/**
 * The exec's command: sh first, so an image without python3 gets a line saying so instead of an OCI
 * error. `-I` ignores PYTHON* variables and the home's site-packages (the home is the sandbox's to
 * write); `-S` skips `site` altogether.
 */
export function relayCommand(socketPath: string): string[] {
  const launch = `command -v python3 >/dev/null 2>&1 || { echo '${NO_PYTHON}'; exit 127; }; exec python3 -I -S -c "$1" "$2"`;
  return ["/bin/sh", "-c", launch, "harness-egress-relay", RELAY_SCRIPT, socketPath];
}
