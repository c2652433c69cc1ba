/**
 * own-domain.py as `harness shell` starts it, run by the host's python3: the program it execs gets
 * the entries it was given, no_new_privs, and a Landlock domain of its own (where the kernel has
 * Landlock: a process started in it cannot trace a process of the same uid outside it, which one
 * outside can), or one line saying there is none.
 */
import { type ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { ownDomainSource } from "../../../../src/sandbox/executor/executor-protocol.js";

/** Tries PTRACE_ATTACH on the pid in argv[1]; prints "attached" or the errno. */
const ATTACH = `import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
pid = int(sys.argv[1])
if libc.ptrace(16, pid, 0, 0) == 0:
    os.waitpid(pid, 0x40000000)
    libc.ptrace(17, pid, 0, 0)
    print("attached")
else:
    print("errno", ctypes.get_errno())`;

/** landlock_create_ruleset's ABI version, as own-domain.py asks (2 at least makes a domain). */
const hasLandlock =
  Number(
    execFileSync("python3", [
      "-c",
      "import ctypes; l = ctypes.CDLL(None); l.syscall.restype = ctypes.c_long; print(l.syscall(444, None, 0, 1))",
    ]),
  ) >= 2;

function inOwnDomain(entries: string[], argv: string[]): { stdout: string; stderr: string } {
  const args = ["-I", "-S", "-c", ownDomainSource(), "harness-shell", ...entries, "--", ...argv];
  const { stdout, stderr } = spawnSync("python3", args, { encoding: "utf8" });
  return { stdout, stderr };
}

const started: ChildProcess[] = [];
afterEach(() => {
  for (const child of started.splice(0)) child.kill("SIGKILL");
});

describe("own-domain.py (harness shell's start)", () => {
  it("runs the program with the entries (a later one wins) and no_new_privs", () => {
    const r = inOwnDomain(
      ["FOO=first", "BAR=x=y", "FOO=second"],
      ["/bin/sh", "-c", 'echo "$FOO $BAR"; grep NoNewPrivs /proc/self/status'],
    );
    expect(r.stdout).toMatch(/^second x=y\nNoNewPrivs:\s+1\n$/);
  });

  it("puts it in a domain of its own where the kernel has Landlock, and says so in one line where not", () => {
    const outside = spawn("sleep", ["60"]);
    started.push(outside);
    const pid = String(outside.pid);
    // From outside any domain, the same uid attaches.
    expect(execFileSync("python3", ["-c", ATTACH, pid]).toString()).toBe("attached\n");
    const inside = inOwnDomain([], ["/usr/bin/env", "python3", "-c", ATTACH, pid]);
    if (hasLandlock) {
      expect(inside).toEqual({ stdout: "errno 1\n", stderr: "" });
    } else {
      expect(inside.stdout).toBe("attached\n");
      expect(inside.stderr).toMatch(/^harness shell: this kernel or runtime has no Landlock, [^\n]*\n$/);
    }
  });
});
