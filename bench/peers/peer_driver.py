"""Drives one peer sandbox (peer_systems.py) for bench/peers-bench.ts over the line protocol that
bench/peers/harness-driver.ts speaks for harness, so that the bench gives every system the same
requests and judges every answer the same way. Runs in the bench's own virtual environment
(peers-venv.ts), never as a dependency of harness.

    python peer_driver.py SYSTEM
    env: BENCH_IMAGE, BENCH_RECORD_DIR; SWE-ReX also BENCH_SWEREX_IMAGE, BENCH_SWEREX_NETWORK(_NOTE)

Requests, one JSON object a line on stdin:
    {"op": "open", "deadline": S}    the sandbox from nothing, then `echo first` in it (timed together)
    {"op": "run", "command": C, "timeout": T, "deadline": S, "digest": D}
    {"op": "close", "deadline": S}
Replies, one a line on stdout: {"ready": {...}} once the peer's modules are loaded, then one per
request: {"returned": true, "ms": M, ...}, or {"returned": false, "waited": S} when the call had not
come back by its deadline (the call is left running; the bench then kills this process).
Outputs come back as bytes (base64), a str encoded as UTF-8 (lone surrogates from a surrogateescape
decode become their bytes again), so the bench compares bytes, never counts.
"""

import base64
import json
import os
import queue
import sys
import threading
import time

from peer_systems import preload, system
from record import record_docker_py_creations


def output(value, digest):
    if value is None:
        return None
    if isinstance(value, str):
        if digest:  # the flood: no copy of what may be 200 MB (it would count as the peer's memory)
            return {"kind": "str", "len": len(value), "allZero": value.count("\x00") == len(value)}
        try:
            data = value.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            data = value.encode("utf-8", "surrogatepass")
        return {"kind": "str", "len": len(data), "b64": base64.b64encode(data).decode()}
    data = bytes(value)
    if digest:
        return {"kind": "bytes", "len": len(data), "allZero": data.count(0) == len(data)}
    return {"kind": "bytes", "len": len(data), "b64": base64.b64encode(data).decode()}


def result_reply(r, digest):
    return {
        "stdout": output(r.stdout, digest),
        "stderr": output(r.stderr, digest),
        "merged": r.merged,
        "exit": r.exit_code,
        "error": r.error,
        "timedOut": r.timed_out,
    }


class Worker:
    """One thread runs every call in turn (SWE-ReX's event loop stays on one thread); the main thread
    waits for each up to its deadline."""

    def __init__(self):
        self.jobs = queue.Queue()
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        while True:
            job, box, done = self.jobs.get()
            started = time.perf_counter()
            try:
                box["value"] = job()
            except BaseException as e:  # a peer's failure is data for the bench
                box["error"] = f"{type(e).__name__}: {e}"[:500]
            box["ms"] = (time.perf_counter() - started) * 1000
            done.set()

    def call(self, job, deadline):
        box, done = {}, threading.Event()
        self.jobs.put((job, box, done))
        return box if done.wait(deadline) else None


def main():
    name = sys.argv[1]
    image = os.environ["BENCH_IMAGE"]
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever a library prints goes to stderr, never into the protocol

    def send(message):
        protocol.write(json.dumps(message) + "\n")

    record_docker_py_creations()
    preload(name)
    peer = system(name)
    worker = Worker()
    send({"ready": {"system": name, "settings": peer.settings()}})

    def open_and_first():
        peer.open(image)
        return peer.run("echo first", 60)

    stuck = False
    for line in sys.stdin:
        request = json.loads(line)
        op, deadline = request["op"], request["deadline"]
        if stuck:
            send({"returned": False, "waited": 0, "stuck": True})
            continue
        digest = bool(request.get("digest"))
        if op == "open":
            box = worker.call(open_and_first, deadline)
        elif op == "run":
            box = worker.call(lambda: peer.run(request["command"], request["timeout"]), deadline)
        else:
            box = worker.call(peer.close, deadline)
        if box is None:
            stuck = True
            send({"returned": False, "waited": deadline})
            continue
        reply = {"returned": True, "ms": round(box["ms"], 3), "error": box.get("error")}
        if op != "close" and "value" in box:
            reply.update(result_reply(box["value"], digest))
            reply["error"] = box["value"].error
        send(reply)
        if op == "close":
            break
    sys.stdout.flush()
    os._exit(0)  # a call left running past its deadline must not keep this process alive


main()
