"""Runs a command with a pseudo-terminal as its stdin and stdout, the way a user's terminal would.

For tests of interactive commands (`harness shell` refuses a stdin that is not a terminal): what
arrives on this program's stdin is typed into the terminal, what the command writes to it comes out
on this program's stdout, its stderr stays ours. SIGHUP, SIGTERM and SIGINT sent to this program
are passed on to the command, and this program exits as the command did (128+N for a signal).
Closing this program's stdin types Ctrl-D, as closing a terminal's input would end a shell.
"""

import os
import pty
import select
import signal
import sys


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("usage: pty-run.py COMMAND [ARG...]\n")
        return 2
    saved_stderr = os.dup(2)
    pid, master = pty.fork()
    if pid == 0:
        os.dup2(saved_stderr, 2)
        os.execvp(argv[1], argv[1:])

    def forward(signum, _frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for signum in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, forward)

    inputs = [0, master]
    while True:
        try:
            ready, _, _ = select.select(inputs, [], [])
        except InterruptedError:
            continue
        if master in ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                data = b""
            if not data:
                break
            os.write(1, data)
        if 0 in ready:
            data = os.read(0, 65536)
            if data:
                os.write(master, data)
            else:
                # The terminal's end-of-input key: a shell reading a line ends on it.
                os.write(master, b"\x04")
                inputs.remove(0)
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
