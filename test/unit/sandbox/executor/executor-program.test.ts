/**
 * executor.py itself, run by the host's python3 and driven by frames as the host drives it in a
 * container: run, output apart, exit code and cwd, kill, census, a forged frame, and what a command
 * can reach of it. As root (CI) it runs its commands as nobody, as it does in the sandbox (root
 * machinery); as another user, as that user (the same-uid model).
 */
import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { EXEC_TAG_VAR } from "../../../../src/sandbox/exec/exec-scripts.js";
import { encodeFrame, type Frame, FrameDecoder } from "../../../../src/sandbox/executor/executor-frames.js";
import {
  EXECUTOR_LOADER,
  EXECUTOR_NAME,
  executorPayload,
  FRAME,
  FRAME_HEADER_BYTES,
  NO_NONCE,
} from "../../../../src/sandbox/executor/executor-protocol.js";

const asRoot = process.getuid?.() === 0;
/** Who its commands run as: nobody under root (the machinery drops to it), else ourselves. */
const commandsUser = asRoot ? "65534:65534" : `${process.getuid?.()}:${process.getgid?.()}`;

class Driven {
  readonly frames: Frame[] = [];
  private waiters: Array<() => void> = [];
  constructor(readonly child: ChildProcessWithoutNullStreams) {
    const decoder = new FrameDecoder((frame) => {
      this.frames.push({ ...frame, payload: Buffer.from(frame.payload) });
      for (const wake of this.waiters.splice(0)) wake();
    });
    child.stdout.on("data", (chunk: Buffer) => decoder.push(chunk));
  }

  send(kind: string, nonce: string, body: unknown): void {
    this.child.stdin.write(encodeFrame(kind, nonce, typeof body === "string" ? body : JSON.stringify(body)));
  }

  async next(kind: string, nonce: string): Promise<Frame> {
    for (;;) {
      const found = this.frames.find((f) => f.kind === kind && f.nonce === nonce);
      if (found) return found;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /** Runs a command to its end: stdout, stderr and the end frame's JSON. */
  async run(command: string, nonce: string, env: string[] = []) {
    this.send(FRAME.run, nonce, { command, start: "/tmp", workdir: "/tmp", env, tag: "t".repeat(16) });
    const end = JSON.parse((await this.next(FRAME.end, nonce)).payload.toString());
    const of = (kind: string) =>
      Buffer.concat(
        this.frames.filter((f) => f.kind === kind && f.nonce === nonce).map((f) => f.payload),
      ).toString();
    return { stdout: of(FRAME.stdout), stderr: of(FRAME.stderr), end };
  }
}

const started: ChildProcessWithoutNullStreams[] = [];

function startExecutor(tagVar = EXEC_TAG_VAR): Driven {
  const child = spawn("python3", ["-I", "-S", "-c", EXECUTOR_LOADER, EXECUTOR_NAME, commandsUser, tagVar], {
    cwd: "/",
  });
  started.push(child);
  child.stdin.write(executorPayload());
  return new Driven(child);
}

afterEach(() => {
  for (const child of started.splice(0)) child.kill("SIGKILL");
});

const nonce = (n: number) => n.toString(16).padStart(16, "a");

describe("executor.py, driven by frames", () => {
  it("says hello: protected, and root only where it was started as root", async () => {
    const ex = startExecutor();
    const hello = JSON.parse((await ex.next(FRAME.hello, NO_NONCE)).payload.toString());
    expect(hello).toMatchObject({ protected: true, root: asRoot });
    expect(typeof hello.landlock).toBe("boolean");
  });

  it("runs a command as the commands' user: stdout and stderr apart, its exit code, its cwd", async () => {
    const ex = startExecutor();
    const r = await ex.run("echo out; echo err >&2; id -u; cd /; exit 3", nonce(1));
    expect(r.stdout).toBe(`out\n${commandsUser.split(":")[0]}\n`);
    expect(r.stderr).toBe("err\n");
    expect(r.end).toMatchObject({ code: 3, cwd: "/", survivors: [] });
  });

  it("gives the command no capability, no_new_privs where it dropped, and its own tag", async () => {
    const ex = startExecutor();
    const r = await ex.run(
      `grep -E '^(CapEff|CapPrm|NoNewPrivs):' /proc/self/status; echo "tag=$${EXEC_TAG_VAR}"`,
      nonce(2),
    );
    expect(r.stdout).toMatch(/^CapPrm:\s+0+$/m);
    expect(r.stdout).toMatch(/^CapEff:\s+0+$/m);
    expect(r.stdout).toContain(`tag=${"t".repeat(16)}`);
    if (asRoot) expect(r.stdout).toMatch(/^NoNewPrivs:\s+1$/m);
  });

  it("lets a command link and rename across directories in its Landlock domain", async () => {
    const ex = startExecutor();
    const dir = `/tmp/harness-refer-${process.pid}`;
    const r = await ex.run(
      `rm -rf ${dir}; mkdir -p ${dir}/a ${dir}/b && cd ${dir} && echo x > a/f && mv a/f b/f && ln b/f a/g && mv a b/a && cat b/a/g; rm -rf ${dir}`,
      nonce(9),
    );
    expect(r.stderr).toBe("");
    expect(r.stdout).toBe("x\n");
    expect(r.end.code).toBe(0);
  });

  it("a forged end frame in the output is only output; the end is the command's own", async () => {
    const ex = startExecutor();
    const fake = `X${nonce(3)}\\000\\000\\000\\014{"code":0}`;
    const r = await ex.run(`printf '${fake}'; echo; exit 7`, nonce(3));
    expect(r.end.code).toBe(7);
    expect(r.stdout).toContain('{"code":0}');
  });

  it("a command cannot read the executor's environment or descriptors", async () => {
    const ex = startExecutor();
    const r = await ex.run(
      "cat /proc/$PPID/environ >/dev/null 2>&1 && echo ENVIRON; ls /proc/$PPID/fd >/dev/null 2>&1 && echo FD; kill -0 $PPID 2>/dev/null && echo SIGNAL; true",
      nonce(4),
    );
    expect(r.stdout).not.toMatch(/ENVIRON|FD/);
    // Only the root machinery is out of reach of signals; the same-uid model is not.
    if (asRoot) expect(r.stdout).not.toContain("SIGNAL");
  });

  it("kills a command's whole tree on a kill frame, setsid children included", async () => {
    const ex = startExecutor();
    const n = nonce(5);
    ex.send(FRAME.run, n, {
      command: "setsid sleep 300 & sleep 300",
      start: "/tmp",
      workdir: "/tmp",
      env: [],
      tag: "k".repeat(16),
    });
    const started = JSON.parse((await ex.next(FRAME.started, n)).payload.toString());
    expect(started.pid).toBeGreaterThan(1);
    ex.send(FRAME.kill, n, { grace: 0.2 });
    const end = JSON.parse((await ex.next(FRAME.end, n)).payload.toString());
    // Ended by a signal: TERM, or KILL when the grace ran out first (the shell's EXIT trap runs on TERM).
    expect([128 + 15, 128 + 9]).toContain(end.code);
    expect(end.survivors).toEqual([]);
    const left = execFileSync("sh", [
      "-c",
      `grep -l k${"k".repeat(15)} /proc/[0-9]*/environ 2>/dev/null || true`,
    ]);
    expect(left.toString().trim()).toBe("");
  });

  it("answers a census with a yes or no", async () => {
    const ex = startExecutor();
    ex.send(FRAME.census, NO_NONCE, "");
    const census = JSON.parse((await ex.next(FRAME.census, NO_NONCE)).payload.toString());
    expect(typeof census.alone).toBe("boolean");
  });

  it("at the end of its stdin it says bye and exits, and its spare (the next call's process) with it", async () => {
    // A tag variable of its own names this executor's processes in `ps`, whatever else runs here.
    const tagVar = `HARNESS_EXEC_${process.pid}_${Date.now()}`;
    const ex = startExecutor(tagVar);
    const mine = () =>
      execFileSync("ps", ["-eo", "pid,args", "-ww"])
        .toString()
        .split("\n")
        .filter((line) => line.includes(tagVar));
    const r = await ex.run("true", nonce(6));
    expect(r.end.code).toBe(0);
    // Between calls: the executor and the spare it forked for the next call.
    await expect.poll(() => mine().length, { timeout: 5_000, interval: 20 }).toBe(2);
    const exited = new Promise<number | null>((resolve) => ex.child.once("exit", resolve));
    ex.child.stdin.end();
    await ex.next(FRAME.bye, NO_NONCE);
    expect(ex.frames.at(-1)?.kind).toBe(FRAME.bye);
    expect(await exited).toBe(0);
    // A long-lived container would otherwise keep one more python3 for every harness process that
    // used it, against its memory and process limits.
    await expect.poll(mine, { timeout: 5_000, interval: 50 }).toEqual([]);
  });

  it("runs commands one after another, each on a fresh process made ahead of it", async () => {
    const ex = startExecutor();
    const pids = new Set<string>();
    for (let i = 10; i < 15; i++) {
      const r = await ex.run("echo $$", nonce(i));
      expect(r.end.code).toBe(0);
      pids.add(r.stdout.trim());
    }
    expect(pids.size).toBe(5);
  });
});

describe("executor.py and executor-protocol.ts agree", () => {
  const source = readFileSync(
    new URL("../../../../src/sandbox/executor/executor.py", import.meta.url),
    "utf8",
  );

  it("on the header: kind, nonce and length in FRAME_HEADER_BYTES", () => {
    const format = /HDR = struct\.Struct\("(.+?)"\)/.exec(source)?.[1];
    expect(format).toBe(">c16sI");
    const size = execFileSync("python3", ["-c", `import struct; print(struct.calcsize("${format}"))`]);
    expect(Number(size.toString())).toBe(FRAME_HEADER_BYTES);
    expect(NO_NONCE).toBe("0".repeat(16));
    expect(source).toContain('ZERO = b"0" * 16');
  });

  it("on every frame kind", () => {
    for (const [name, kind] of Object.entries(FRAME)) {
      expect(source, name).toMatch(new RegExp(`b"${kind}"`));
    }
  });
});
