"""What a sleeping process's wake-up costs on this machine, with no engine in the way (issue 35): a
byte goes round a ring of HOPS processes joined by pipes (each one asleep in read until its byte
comes), back to back and after 1 s of idle. A harness call is about a dozen such wake-ups in a row
(node, dockerd, the shim, the executor, its spare, bash stopping and going on, and back), SWE-ReX's
`execute` about half as many: the difference between the two series, per hop, is what an idle gap
adds to each.

    python3 bench/wakeup_chain.py [HOPS=12] [ROUNDS=30]
"""

import os
import statistics
import sys
import time


def ring(hops):
    """Forks hops-1 relays; returns the write end into the ring and the read end out of it."""
    first_r, first_w = os.pipe()
    r = first_r
    for _ in range(hops - 1):
        nr, nw = os.pipe()
        if os.fork() == 0:
            os.close(first_w)
            while True:
                b = os.read(r, 1)
                if not b:
                    os._exit(0)
                os.write(nw, b)
        os.close(r)
        os.close(nw)
        r = nr
    return first_w, r


def main():
    hops = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    w, r = ring(hops)

    def once():
        t = time.perf_counter()
        os.write(w, b"x")
        os.read(r, 1)
        return (time.perf_counter() - t) * 1000

    for _ in range(20):
        once()
    back, idle = [], []
    for _ in range(rounds):
        back += [once() for _ in range(3)]
        time.sleep(1)
        idle.append(once())
    b, i = statistics.median(back), statistics.median(idle)
    print(f"{hops} hops, load {os.getloadavg()[0]:.2f}: back to back {b:.3f} ms, after 1 s idle {i:.3f} ms, "
          f"{(i - b) / hops * 1000:.0f} us more a hop")
    os.close(w)


main()
