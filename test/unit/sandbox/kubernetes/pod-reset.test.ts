/**
 * pod-reset.sh, the kept pod's reset (pod/kept-pod.ts), under the host's sh as a uid nothing else on
 * this machine uses (its `kill -KILL -1` reaches only that uid's processes), through run-as.py as in
 * the pod. Needs root, as CI runs.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  lchownSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { programText } from "../../../../src/sandbox/exec/program-text.js";
import { asUser } from "../../../../src/sandbox/kubernetes/api/pod-command.js";

const resetScript = programText(
  new URL("../../../../src/sandbox/kubernetes/pod/pod-reset.sh", import.meta.url),
);
/** A uid and gid no account on the machine has. */
const ID = 54_321;
const USER = `${ID}:${ID}`;

function run(argv: string[]) {
  const [cmd, ...args] = asUser(USER, argv);
  return spawnSync(cmd ?? "", args, { encoding: "utf8" });
}

const reset = (...dirs: string[]) => run(["/bin/sh", "-c", resetScript, "harness-pod-reset", ...dirs]);

/** Resolves once `pid` is the sleep, running as the user (run-as.py has dropped to it and exec'd). */
async function runningAsUser(pid: number): Promise<void> {
  for (;;) {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    if (/^Name:\s+sleep$/m.test(status) && new RegExp(`^Uid:\\s+${ID}\\s`, "m").test(status)) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe.skipIf(process.getuid?.() !== 0)("pod-reset.sh (run as a uid of its own, needs root)", () => {
  let root = "";
  let leftover: ChildProcess | undefined;
  afterEach(() => {
    leftover?.kill("SIGKILL");
    rmSync(root, { recursive: true, force: true });
  });

  /** A directory of the user's, as the pod's emptyDirs are after pod-setup.sh. */
  const ownDir = (name: string) => {
    const dir = join(root, name);
    mkdirSync(dir, { mode: 0o755 });
    chownSync(dir, ID, ID);
    return dir;
  };

  const layout = () => {
    root = mkdtempSync(join(tmpdir(), "harness-pod-reset-"));
    chmodSync(root, 0o755);
    const outside = join(root, "outside.txt");
    writeFileSync(outside, "not the user's to delete\n");
    const ws = ownDir("ws");
    const home = ownDir("home");
    // What a session leaves: nested files, a directory it made unreadable and unwritable, a dotfile,
    // and a link out of the workspace (removed itself, never what it leads to).
    expect(
      run([
        "/bin/sh",
        "-c",
        `cd ${ws} && mkdir -p a/b && echo x > a/b/f && echo y > .hidden && mkdir locked && echo z > locked/f && chmod 000 locked`,
      ]).status,
    ).toBe(0);
    symlinkSync(outside, join(ws, "link"));
    lchownSync(join(ws, "link"), ID, ID);
    expect(run(["/bin/sh", "-c", `echo h > ${home}/.profile`]).status).toBe(0);
    return { ws, home, outside };
  };

  it("ends the user's processes, empties the directories, follows no link", async () => {
    const { ws, home, outside } = layout();
    const [cmd, ...args] = asUser(USER, ["/bin/sleep", "1000"]);
    leftover = spawn(cmd ?? "", args, { stdio: "ignore", detached: true });
    const ended = new Promise<NodeJS.Signals | null>((resolve) =>
      leftover?.on("exit", (code, signal) => resolve(signal ?? (`exit ${code}` as NodeJS.Signals))),
    );
    await runningAsUser(leftover.pid ?? 0);
    const result = reset(ws, home);
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
    expect(readdirSync(ws)).toEqual([]);
    expect(readdirSync(home)).toEqual([]);
    expect(existsSync(outside)).toBe(true);
    expect(await ended).toBe("SIGKILL");
  });

  it("fails when a directory cannot be emptied (the pod is then deleted, not kept)", () => {
    const { ws } = layout();
    // Something of another uid in a directory the user may not write: the user cannot remove it.
    const foreign = join(ws, "foreign");
    mkdirSync(foreign, { mode: 0o755 });
    writeFileSync(join(foreign, "f"), "root's\n");
    const result = reset(ws);
    expect(result.status).not.toBe(0);
    expect(existsSync(join(foreign, "f"))).toBe(true);
  });
});
