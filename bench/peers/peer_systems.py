"""The peers, each behind the same four methods for bench/peers/peer_driver.py: open() makes a
sandbox from nothing, run(command, timeout) runs one command as an agent would and returns a Result,
close() ends it, settings() says what the sandbox was given. Each peer keeps its defaults except:
  - the image (harness's own, or one built from it offline: no registry is reachable here);
  - the network, set as each peer's own documentation recommends (see NETWORK below);
  - every container and volume it creates is recorded by id as the engine returns it (record.py),
    so that the bench removes what its peers made and nothing else.
Commands are given the timeout the bench asks for, in each peer's own way; a peer whose call takes
no timeout gets none (the driver's deadline then says the call never returned).
"""

import asyncio
import os
import sys

from record import cidfile_path


class Result:
    """What one call gave its caller. stdout and stderr are str or bytes, as the peer returned them;
    stderr is None where the peer merges it into its one output (kept in stdout)."""

    def __init__(self, stdout, stderr, exit_code, error=None, timed_out=None, merged=False):
        self.stdout = stdout
        self.stderr = stderr
        self.exit_code = exit_code
        self.error = error
        self.timed_out = timed_out
        self.merged = merged


def describe(error):
    return f"{type(error).__name__}: {error}"[:300]


class Mini:
    """mini-swe-agent's DockerEnvironment: `docker run -d … sleep 2h`, then one `docker exec` of
    `bash -lc COMMAND` per call (output and stderr merged, decoded with errors="replace")."""

    # Its own benchmark config (minisweagent/config/benchmarks/programbench.yaml) runs untrusted
    # tasks with `--network none`; its default (["--rm"]) would take the engine's default network.
    RUN_ARGS = ["--rm", "--network", "none"]

    def open(self, image):
        from minisweagent.environments.docker import DockerEnvironment

        self.env = DockerEnvironment(image=image, run_args=[*self.RUN_ARGS, "--cidfile", cidfile_path()])

    def run(self, command, timeout):
        r = self.env.execute({"command": command}, timeout=timeout)
        extra = r.get("extra") or {}
        timed_out = extra.get("exception_type") == "TimeoutExpired"
        return Result(r["output"], None, r["returncode"], r.get("exception_info") or None, timed_out, merged=True)

    def close(self):
        self.env.cleanup()

    def settings(self):
        return {"network": "none (--network none, as its programbench.yaml)", "call": "docker exec bash -lc (CLI)"}


class LlmSandbox:
    """llm-sandbox's SandboxSession (Docker backend): one container, one docker-py exec per call.
    execute_command takes a string that docker-py splits with shlex and runs without a shell, so the
    command goes as ["/bin/sh", "-c", command], as an agent needing a shell would pass it. It takes no
    timeout."""

    # Its README's agent example: runtime_configs={"network_mode": "none", …} ("no egress").
    RUNTIME = {"network_mode": "none"}

    def open(self, image):
        from llm_sandbox import SandboxSession

        # harness's image names no long-running command of its own (harness gives one at create).
        self.session = SandboxSession(
            lang="python",
            image=image,
            skip_environment_setup=True,
            runtime_configs={**self.RUNTIME, "command": ["sleep", "infinity"]},
        )
        self.session.open()

    def run(self, command, timeout):
        try:
            r = self.session.execute_command(["/bin/sh", "-c", command])
        except Exception as e:  # its default encoding_errors="strict" raises on non-UTF-8 output
            return Result(None, None, None, describe(e))
        return Result(r.stdout, r.stderr, r.exit_code)

    def close(self):
        self.session.close()

    def settings(self):
        return {"network": "none (network_mode: none, as its README's agent example)", "call": "docker-py exec"}


class SweRex:
    """SWE-ReX's DockerDeployment: `docker run -p PORT:8000 IMAGE swerex-remote`, then HTTP to its
    server. mode "session": run_in_session (one bash under pexpect, state kept, output merged);
    mode "execute": execute (a fresh `subprocess.run(shell=True)` per call, stdout and stderr apart)."""

    def __init__(self, mode):
        self.mode = mode

    def open(self, image):
        from swerex.deployment.docker import DockerDeployment
        from swerex.runtime.abstract import CreateBashSessionRequest

        self.loop = asyncio.new_event_loop()
        network = os.environ["BENCH_SWEREX_NETWORK"]
        port = os.environ.get("BENCH_SWEREX_PORT")  # on the host's network its server has 8000
        self.deployment = DockerDeployment(
            image=os.environ["BENCH_SWEREX_IMAGE"],
            port=int(port) if port else None,
            docker_args=["--network", network, "--cidfile", cidfile_path()],
        )
        self.loop.run_until_complete(self.deployment.start())
        self.runtime = self.deployment.runtime
        if self.mode == "session":
            self.loop.run_until_complete(self.runtime.create_session(CreateBashSessionRequest()))

    def run(self, command, timeout):
        from swerex.runtime.abstract import BashAction, Command

        try:
            if self.mode == "session":
                action = BashAction(command=command, timeout=timeout, check="silent")
                r = self.loop.run_until_complete(self.runtime.run_in_session(action))
                return Result(r.output, None, r.exit_code, merged=True)
            r = self.loop.run_until_complete(self.runtime.execute(Command(command=command, shell=True, timeout=timeout)))
            return Result(r.stdout, r.stderr, r.exit_code)
        except Exception as e:  # its timeout is an exception (CommandTimeoutError)
            return Result(None, None, None, describe(e), "Timeout" in type(e).__name__)

    def close(self):
        self.loop.run_until_complete(self.deployment.stop())

    def settings(self):
        network = os.environ["BENCH_SWEREX_NETWORK_NOTE"]
        call = "run_in_session (pexpect bash)" if self.mode == "session" else "execute (subprocess.run per call)"
        return {"network": network, "call": f"HTTP to its server, {call}"}


def epicbox_urllib3_shim():
    """epicbox 1.1.0 (2019) passes Retry(method_whitelist=…), which urllib3 2.0 renamed allowed_methods:
    without this one line, importing epicbox works but its first call raises TypeError."""
    from urllib3.util.retry import Retry

    init = Retry.__init__
    # The shim: method_whitelist=X becomes allowed_methods=X (False there too means "retry any method").
    Retry.__init__ = lambda self, *a, method_whitelist=None, **k: init(self, *a, **k, **({} if method_whitelist is None else {"allowed_methods": method_whitelist}))


class Epicbox:
    """epicbox: a one-time container per call (`/bin/sh -c COMMAND`, attached, then removed), files
    kept between calls in its working_directory() volume, as its README's multi-step example does."""

    PROFILE = "bench"

    def open(self, image):
        import epicbox

        self.epicbox = epicbox
        # Its Profile defaults: user root, network_disabled=True, read_only=False.
        epicbox.configure(profiles=[epicbox.Profile(self.PROFILE, image)])
        self.workdir_context = epicbox.working_directory()
        self.workdir = self.workdir_context.__enter__()

    def run(self, command, timeout):
        # Its limits' defaults (cputime 1 s, memory 64 MB) kept; realtime is the call's timeout.
        r = self.epicbox.run(self.PROFILE, command, workdir=self.workdir, limits={"realtime": timeout})
        return Result(r["stdout"], r["stderr"], r["exit_code"], None, r["timeout"])

    def close(self):
        self.workdir_context.__exit__(None, None, None)

    def settings(self):
        return {"network": "none (Profile network_disabled=True, its default)", "call": "a container per call"}


def system(name):
    if name == "epicbox":
        epicbox_urllib3_shim()
    return {
        "mini": Mini,
        "llm-sandbox": LlmSandbox,
        "swerex-session": lambda: SweRex("session"),
        "swerex-execute": lambda: SweRex("execute"),
        "epicbox": Epicbox,
    }[name]()


def preload(name):
    """Imports the peer's modules before anything is timed (harness's driver loads its modules too)."""
    modules = {
        "mini": ["minisweagent.environments.docker"],
        "llm-sandbox": ["llm_sandbox"],
        "swerex-session": ["swerex.deployment.docker", "swerex.runtime.abstract"],
        "swerex-execute": ["swerex.deployment.docker", "swerex.runtime.abstract"],
        "epicbox": ["epicbox"],
    }[name]
    for module in modules:
        __import__(module)
    return sys.modules[modules[0]]
