"""One peer sandbox, driven as an agent would drive it, for bench/peers-bench.ts. Runs in the
benchmark's cached virtual environment (never a dependency of harness), with each peer's defaults
except the image, which is harness's own sandbox image (no registry is reachable to pull another).

    python peer_driver.py calls PEER IMAGE N   # FIRST after the first result, then one RESULT line (JSON)
    python peer_driver.py flood PEER IMAGE BYTES   # one RESULT line: did the flood come back, how much

Peers: mini (mini-swe-agent's DockerEnvironment), llm-sandbox (SandboxSession, Docker backend),
swerex (SWE-ReX's DockerDeployment; its server runs from this environment, mounted read-only into the
container, since the image has no swe-rex and the container cannot install it).
"""

import json
import os
import subprocess
import sys
import threading
import time


class Mini:
    def __init__(self, image):
        from minisweagent.environments.docker import DockerEnvironment

        self.env = DockerEnvironment(image=image, timeout=20)
        self.container_id = self.env.container_id

    def run(self, command, timeout=20):
        r = self.env.execute({"command": command}, timeout=timeout)
        return r["output"], None, r["returncode"]

    def close(self):
        subprocess.run(["docker", "rm", "-f", self.container_id], capture_output=True)


class LlmSandbox:
    def __init__(self, image):
        from llm_sandbox import SandboxSession

        # harness's image names no command of its own (harness gives one at create): a long sleep.
        self.session = SandboxSession(
            lang="python", image=image, skip_environment_setup=True, runtime_configs={"command": ["sleep", "infinity"]}
        )
        self.session.open()
        self.container_id = self.session.container.id

    def run(self, command, timeout=20):
        # execute_command takes no timeout: a call that outlives `timeout` is left running in its
        # thread (as an agent's call would hang), and reported as such.
        box = []
        worker = threading.Thread(
            target=lambda: box.append(self.session.execute_command(["/bin/sh", "-c", command])), daemon=True
        )
        worker.start()
        worker.join(timeout)
        if not box:
            return "", f"still running after {timeout} s (execute_command has no timeout)", None
        r = box[0]
        return r.stdout, r.stderr, r.exit_code

    def close(self):
        self.session.close()


class SweRex:
    def __init__(self, image):
        import asyncio

        from swerex.deployment.docker import DockerDeployment
        from swerex.runtime.abstract import CreateBashSessionRequest

        venv = sys.prefix
        base = os.path.realpath(sys.base_prefix)
        self.loop = asyncio.new_event_loop()
        # Its client reaches its server over TCP: this engine has no bridge network (the container
        # would have no interface but lo), so the server shares the host's network, on its own port 8000.
        self.deployment = DockerDeployment(
            image=image,
            pull="never",
            port=int(os.environ.get("SWEREX_PORT", "8000")),
            docker_args=[
                "--network",
                "host",
                "-v",
                f"{venv}:{venv}:ro",
                "-v",
                f"{base}:{base}:ro",
                "-e",
                f"PATH={venv}/bin:/usr/bin:/bin",
            ],
        )
        self.loop.run_until_complete(self.deployment.start())
        self.runtime = self.deployment.runtime
        self.loop.run_until_complete(self.runtime.create_session(CreateBashSessionRequest()))
        self.container_id = self.deployment._container_name

    def run(self, command, timeout=20):
        from swerex.runtime.abstract import BashAction

        try:
            r = self.loop.run_until_complete(
                self.runtime.run_in_session(BashAction(command=command, timeout=timeout, check="silent"))
            )
            return r.output, None, r.exit_code
        except Exception as e:  # a timeout is an exception here
            return "", f"{type(e).__name__}: {e}", None

    def close(self):
        self.loop.run_until_complete(self.deployment.stop())


PEERS = {"mini": Mini, "llm-sandbox": LlmSandbox, "swerex": SweRex}


def top(container):
    r = subprocess.run(["docker", "top", container, "-eo", "pid,args"], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        raise RuntimeError(f"docker top {container} failed: {r.stderr.strip()}")
    return r.stdout


def behaviours(p):
    """The same checks, in the same order, as peers-bench.ts runs on harness; the timed-out call last,
    since some peers' sessions do not survive it."""
    out = {}
    t = time.monotonic()
    r = p.run("sleep 30 >/dev/null 2>&1 & echo started", timeout=20)
    out["background sleep returns"] = {"ok": "started" in (r[0] or "") and time.monotonic() - t < 15, "seconds": round(time.monotonic() - t, 2)}
    r = p.run("echo out; echo err >&2; sh -c 'exit 3'")
    out["stdout, stderr apart, exit code"] = {"ok": (r[0] or "").strip() == "out" and (r[1] or "").strip() == "err" and r[2] == 3, "stdout": r[0], "stderr": r[1], "exit": r[2]}
    p.run("cd /tmp")
    r = p.run("pwd")
    out["cwd persists"] = {"ok": (r[0] or "").strip() == "/tmp", "pwd": (r[0] or "").strip()[:80]}
    r = p.run("id -u")
    out["non-root"] = {"ok": (r[0] or "").strip() not in ("0", ""), "uid": (r[0] or "").strip()[:80]}
    r = p.run("grep -cv -e '^ *lo:' -e '|' /proc/net/dev")
    out["no network"] = {"ok": (r[0] or "").strip() == "0", "interfaces besides lo": (r[0] or "").strip()[:80]}
    r = p.run("printf 'a\\000b\\377c'")
    text = r[0] or ""
    out["binary output intact"] = {"ok": "\x00" in text and "\ufffd" not in text and len(text) >= 5, "output": repr(text)[:80]}
    r = p.run("setsid sleep 301 & sleep 60", timeout=3)
    time.sleep(1)
    out["timed-out setsid child gone"] = {"ok": "sleep 301" not in top(p.container_id), "exit": r[2]}
    return out


def main():
    mode, peer, image, arg = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    p = PEERS[peer](image)
    try:
        if mode == "flood":
            t = time.monotonic()
            try:
                r = p.run(f"head -c {arg} /dev/zero", timeout=120)
                got = len(r[0] or "")
                print("RESULT " + json.dumps({"returned": True, "chars": got, "seconds": round(time.monotonic() - t, 2)}), flush=True)
            except BaseException as e:
                print("RESULT " + json.dumps({"returned": False, "error": f"{type(e).__name__}: {e}"[:300]}), flush=True)
            return
        r = p.run("echo first")
        print("FIRST " + json.dumps({"output": r[0]}), flush=True)
        calls = []
        for _ in range(arg):
            t = time.perf_counter()
            p.run("true")
            calls.append((time.perf_counter() - t) * 1000)
        print("RESULT " + json.dumps({"calls_ms": calls, "behaviours": behaviours(p)}), flush=True)
    finally:
        p.close()


main()
