"""One connection of a published port (`--publish`), inside the sandbox (started by
forward-connection.ts, one exec per connection, as the sandbox user, on Docker or in a pod). The
sandbox has no network but `lo`: this program connects to the server on its own 127.0.0.1:PORT and
copies bytes between that socket and its stdin/stdout, which the host's listener carries over the
exec's stream (Docker's attach stream, or the pod exec's WebSocket). It decides nothing and listens
on nothing.

Argument: PORT. Exit status 0 when either side ended the connection, 2 when nothing listens on the
port (the reason on stderr). A half-close of the host's side (end of stdin) is passed on as one; the
program then ends when the server closes, or after IDLE_AFTER_EOF seconds without data, so a
server that never closes leaves no forwarder behind. Python 3 standard library only, one thread.
"""
import errno
import os
import selectors
import socket
import sys

LIMIT = 65536
IDLE_AFTER_EOF = 30.0


def write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def main():
    port = int(sys.argv[1])
    try:
        conn = socket.create_connection(("127.0.0.1", port), timeout=10)
    except OSError as e:
        sys.stderr.write("127.0.0.1:%d: %s\n" % (port, e.strerror or e))
        return 2
    conn.settimeout(None)
    sel = selectors.DefaultSelector()
    sel.register(0, selectors.EVENT_READ, "host")
    sel.register(conn, selectors.EVENT_READ, "server")
    host_open = True
    while True:
        events = sel.select(None if host_open else IDLE_AFTER_EOF)
        if not events:
            return 0
        for key, _ in events:
            if key.data == "host":
                data = os.read(0, LIMIT)
                if data:
                    conn.sendall(data)
                    continue
                host_open = False
                sel.unregister(0)
                try:
                    conn.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
            else:
                try:
                    data = conn.recv(LIMIT)
                except OSError as e:
                    if e.errno == errno.ECONNRESET:
                        return 0
                    raise
                if not data:
                    return 0
                write_all(1, data)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BrokenPipeError, ConnectionError):
        sys.exit(0)
