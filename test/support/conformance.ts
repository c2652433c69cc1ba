/**
 * The conformance set: the same behaviour checks run against every engine harness supports (Docker
 * with runc, Docker with runsc, Podman, remote engines). Each engine's test file calls
 * `conformanceSuite` with its own way of opening a sandbox; nothing here knows which engine it is.
 * The ideas come from sandbox-exec, sandbox-recovery, sandbox-hardening, sandbox-copy-mode and
 * adversarial/hangs; no assertion depends on how long something took.
 */
import { chownSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { DockerSandboxOptions } from "../../src/sandbox/docker/docker-sandbox.js";
import type { Sandbox } from "../../src/sandbox/sandbox.js";
import { copyOf } from "./copied.js";
import { makeWorkspace, TEST_GID, TEST_UID } from "./workspace.js";

/**
 * Opens a sandbox on `workspace` with the engine under test; `extra` overrides the defaults (an
 * engine other than Docker takes the options it shares with Docker's).
 */
export type OpenOnEngine = (workspace: string, extra?: Partial<DockerSandboxOptions>) => Promise<Sandbox>;

/** The cases of the set, by name: an engine marks one it cannot pass with a reason. */
export type ConformanceCase =
  | "exit codes and streams"
  | "timeout kill with a setsid escaper"
  | "background process"
  | "fork bomb then next call"
  | "hardening visible inside"
  | "programs run from /tmp and the home"
  | "copy mode round trip"
  | "bind mode"
  | "ls -l and stat";

export interface ConformanceOptions {
  /**
   * Cases this engine cannot pass, each with the reason. They are listed in the test output as
   * skipped with that reason (never dropped silently) and belong in the engine table of docs/engines.md.
   */
  differences?: Partial<Record<ConformanceCase, string>>;
  /** Per-test timeout in ms (default 120 s): slower engines (gVisor, remote) need more. */
  timeoutMs?: number;
}

/** Writes a file owned like the workspace (the sandbox user when the tests run as root). */
function put(root: string, path: string, content: string): void {
  writeFileSync(join(root, path), content);
  if (process.getuid?.() === 0) chownSync(join(root, path), TEST_UID, TEST_GID);
}

export function conformanceSuite(name: string, open: OpenOnEngine, options: ConformanceOptions = {}): void {
  const differences = options.differences ?? {};
  const test = (label: ConformanceCase, body: () => Promise<void>) => {
    const reason = differences[label];
    if (reason !== undefined) it.skip(`${label} (engine difference: ${reason})`, body);
    else it(label, body);
  };

  describe(`conformance: ${name}`, { timeout: options.timeoutMs ?? 120_000 }, () => {
    test("exit codes and streams", async () => {
      using ws = makeWorkspace();
      await using sandbox = await open(ws.path);
      const result = await sandbox.exec("echo out; echo err >&2; exit 3");
      expect(result).toMatchObject({
        stdout: "out\n",
        stderr: "err\n",
        exitCode: 3,
        failed: true,
        timedOut: false,
      });
      expect(await sandbox.exec("true")).toMatchObject({
        exitCode: 0,
        failed: false,
        stdout: "",
        stderr: "",
      });
      await sandbox.exec("mkdir -p sub && cd sub");
      expect((await sandbox.exec("pwd")).stdout).toBe(`${sandbox.workdir}/sub\n`);
      // stdin is closed: a reader gets end of file instead of holding the call.
      expect(await sandbox.exec("cat; echo done", { timeoutMs: 20_000 })).toMatchObject({
        stdout: "done\n",
        timedOut: false,
      });
    });

    test("timeout kill with a setsid escaper", async () => {
      using ws = makeWorkspace();
      await using sandbox = await open(ws.path, { killGraceSeconds: 1 });
      const result = await sandbox.exec(
        "trap '' TERM; echo before; setsid sh -c 'trap \"\" TERM; sleep 700' & sleep 600",
        { timeoutMs: 1500 },
      );
      expect(result).toMatchObject({ timedOut: true, failed: true, stdout: "before\n" });
      expect(result.shortMessage).toBe("Command timed out after 1500 milliseconds");
      const ps = await sandbox.exec("ps -eo args");
      expect(ps.exitCode).toBe(0);
      expect(ps.stdout).not.toMatch(/sleep (600|700)/);
    });

    test("background process", async () => {
      using ws = makeWorkspace();
      await using sandbox = await open(ws.path);
      // The sleeper holds the output pipes: a call that waited for end of stream would time out.
      const result = await sandbox.exec("sleep 300 & echo started", { timeoutMs: 30_000 });
      expect(result).toMatchObject({ stdout: "started\n", exitCode: 0, timedOut: false });
      const sub = await sandbox.exec("(while :; do sleep 1; done) & cd /tmp; echo here", {
        timeoutMs: 30_000,
      });
      expect(sub).toMatchObject({ stdout: "here\n", exitCode: 0, timedOut: false });
      expect((await sandbox.exec("pwd", { timeoutMs: 30_000 })).stdout).toBe("/tmp\n");
    });

    test("fork bomb then next call", async () => {
      using ws = makeWorkspace();
      // The default pid limit: under gVisor it counts the runtime's own host threads, and a low one
      // (64) leaves the sandbox unable to start at all.
      await using sandbox = await open(ws.path, { killGraceSeconds: 1 });
      const bomb = await sandbox.exec("bomb() { bomb | bomb; }; bomb", { timeoutMs: 3000 });
      // runc: the timeout kills it; gVisor: the sandbox dies and harness restarts it. Either way it failed.
      expect(bomb.failed).toBe(true);
      for (let i = 0; i < 3; i++) {
        expect(await sandbox.exec(`echo alive-${i}`, { timeoutMs: 30_000 })).toMatchObject({
          stdout: `alive-${i}\n`,
          exitCode: 0,
        });
      }
    });

    test("hardening visible inside", async () => {
      using ws = makeWorkspace();
      await using sandbox = await open(ws.path);
      expect((await sandbox.exec("grep CapEff /proc/self/status")).stdout).toMatch(/CapEff:\s+0+\n/);
      // prctl(PR_GET_NO_NEW_PRIVS) rather than /proc/self/status: gVisor's status has no NoNewPrivs line.
      const noNewPrivs = await sandbox.exec(
        "python3 -c 'import ctypes; print(ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))'",
      );
      expect(noNewPrivs.stdout).toBe("1\n");
      expect((await sandbox.exec("id -u")).stdout.trim()).not.toBe("0");
      const rootfs = await sandbox.exec("touch /etc/owned");
      expect(rootfs.exitCode).not.toBe(0);
      expect(rootfs.stderr).toMatch(/Read-only file system|Permission denied/);
      expect((await sandbox.exec("test -e /var/run/docker.sock")).exitCode).toBe(1);
      const ifaces = await sandbox.exec("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
      expect(ifaces.stdout.trim().split("\n")).toEqual(["lo"]);
    });

    // Toolchains run what they build there: `go test` its test binary in /tmp, a venv made in /tmp
    // its scripts, `pip install --user` and npx their commands in the home. The workspace runs
    // programs anyway, so `noexec` (the engines' default for a tmpfs) kept nothing out.
    test("programs run from /tmp and the home", async () => {
      using ws = makeWorkspace();
      await using sandbox = await open(ws.path);
      const run = await sandbox.exec(
        "cp /bin/true /tmp/t && /tmp/t && cp /bin/true ~/t && ~/t && printf '#!/bin/sh\necho script\n' > /tmp/s && chmod +x /tmp/s && /tmp/s",
      );
      expect(run).toMatchObject({ exitCode: 0, stdout: "script\n" });
      expect((await sandbox.exec("grep -E ' (/tmp|/home/sandbox) ' /proc/mounts")).stdout).not.toMatch(
        /noexec/,
      );
    });

    test("copy mode round trip", async () => {
      using ws = makeWorkspace();
      put(ws.path, "mod.txt", "one\ntwo\n");
      put(ws.path, "del.txt", "bye\n");
      await using sandbox = await open(ws.path, { isolation: "copy" });
      const run = await sandbox.exec(
        "cat mod.txt && sed -i s/two/TWO/ mod.txt && rm del.txt && echo n > new.txt",
      );
      expect(run).toMatchObject({ stdout: "one\ntwo\n", exitCode: 0 });
      // Nothing reaches the host before the changes are applied.
      expect(readFileSync(join(ws.path, "mod.txt"), "utf8")).toBe("one\ntwo\n");
      const changes = await copyOf(sandbox).exportChanges();
      expect(changes.changes.map((c) => `${c.kind} ${c.path}`).sort()).toEqual([
        "A new.txt",
        "D del.txt",
        "M mod.txt",
      ]);
      const applied = await copyOf(sandbox).applyChanges(changes);
      expect(applied.refused).toEqual([]);
      expect(readFileSync(join(ws.path, "mod.txt"), "utf8")).toBe("one\nTWO\n");
      expect(readFileSync(join(ws.path, "new.txt"), "utf8")).toBe("n\n");
      expect(() => readFileSync(join(ws.path, "del.txt"))).toThrow();
    });

    test("bind mode", async () => {
      using ws = makeWorkspace();
      put(ws.path, "in.txt", "from the host\n");
      await using sandbox = await open(ws.path);
      const run = await sandbox.exec("cat in.txt && echo back > out.txt");
      expect(run).toMatchObject({ stdout: "from the host\n", exitCode: 0 });
      expect(readFileSync(join(ws.path, "out.txt"), "utf8")).toBe("back\n");
      expect(statSync(join(ws.path, "out.txt")).uid).toBe(statSync(ws.path).uid);
    });

    test("ls -l and stat", async () => {
      using ws = makeWorkspace();
      put(ws.path, "f.txt", "x\n");
      await using sandbox = await open(ws.path);
      const run = await sandbox.exec("stat -c '%s %n' f.txt /etc/passwd >/dev/null && ls -l f.txt");
      expect(run.stderr).toBe("");
      expect(run.exitCode).toBe(0);
      expect(run.stdout).toMatch(/^-rw.* f\.txt\n$/);
    });
  });
}
