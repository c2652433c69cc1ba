/**
 * Issue 19: names that are not valid UTF-8. The task creates `$'d\xff'` and `$'s\xff'` in the
 * bind-mounted workspace; a host walk that read directories as strings got U+FFFD back and skipped
 * them, so a setuid file kept its bit and a repository planted under such a directory was not moved
 * aside. Checked from the host, by the exact bytes.
 */
import { execFileSync } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { skipDocker } from "../../support/docker-available.js";
import { makeWorkspace, TEST_GID, TEST_UID } from "../../support/workspace.js";

/** `ws` joined with a relative path given as text and raw bytes. */
const bytesAt = (ws: string, ...parts: (string | number[])[]) =>
  Buffer.concat([Buffer.from(`${ws}/`), ...parts.map((p) => Buffer.from(p))]);

/** The shell's way to the same names: printf's octal escapes. */
const D = `"$(printf 'd\\377')"`;
const S = `"$(printf 's\\377')"`;

/** Host git as its owner would run it, in `dir` (a shell word: the names need printf). */
function hostGit(ws: string, args: string[], dir = "."): void {
  const who = "-c safe.directory=* -c user.name=host -c user.email=host@example.invalid";
  execFileSync("sh", ["-c", `cd ${dir} && git ${who} ${args.join(" ")}`], { cwd: ws, stdio: "ignore" });
}

const stateHome = mkdtempSync(join(tmpdir(), "harness-state-"));
process.env["XDG_STATE_HOME"] = stateHome;
afterAll(() => rmSync(stateHome, { recursive: true, force: true }));

describe.skipIf(skipDocker)("adversarial: names that are not UTF-8", () => {
  it("strips a set-id bit from files named with bytes that are not UTF-8, and names them", async () => {
    using ws = makeWorkspace();
    const lines: string[] = [];
    const sandbox = await DockerSandbox.open({
      workspace: ws.path,
      removeOnStop: true,
      onProgress: (line) => lines.push(line),
    });
    try {
      const made = await sandbox.exec(`mkdir ${D} && cp /bin/sh ${S} && cp /bin/sh ${D}/${S}`);
      expect(made.exitCode).toBe(0);
      // What got through, simulated from the host (the kernel refuses the chmod inside: seccomp).
      chmodSync(bytesAt(ws.path, "s", [0xff]), 0o4755);
      chmodSync(bytesAt(ws.path, "d", [0xff], "/s", [0xff]), 0o2755);
    } finally {
      await sandbox.stop();
    }
    expect(statSync(bytesAt(ws.path, "s", [0xff])).mode & 0o7777).toBe(0o755);
    expect(statSync(bytesAt(ws.path, "d", [0xff], "/s", [0xff])).mode & 0o7777).toBe(0o755);
    expect(lines).toContain("removed the setuid bit from s\\xff");
    expect(lines).toContain("removed the setgid bit from d\\xff/s\\xff");
  });

  it("moves aside a repository planted under such a directory: the host's git status runs nothing", async () => {
    using ws = makeWorkspace();
    hostGit(ws.path, ["-c", "init.defaultBranch=main", "init", "-q"]);
    writeFileSync(join(ws.path, "README.md"), "hello\n");
    hostGit(ws.path, ["add", "-A"]);
    hostGit(ws.path, ["commit", "-qm", "initial"]);
    if (process.getuid?.() === 0) execFileSync("chown", ["-R", "-h", `${TEST_UID}:${TEST_GID}`, ws.path]);
    const lines: string[] = [];
    const sandbox = await DockerSandbox.open({ workspace: ws.path, onProgress: (line) => lines.push(line) });
    try {
      const commit = "git -c user.name=a -c user.email=a@example.invalid";
      const planted = await sandbox.exec(
        [
          // An embedded repository with core.fsmonitor, added to the index as a gitlink: the host's
          // `git status` enters it.
          `git init -q ${D} && git -C ${D} config core.fsmonitor 'touch ${ws.path}/RAN-embedded'`,
          `${commit} -C ${D} commit -q --allow-empty -m x && git add ${D}`,
          // A `.git` file under a deeper such name, pointing at a git directory the task wrote.
          `mkdir -p ${D}2/${S} .evil && cp -r .git/objects .git/refs .git/HEAD .evil/`,
          `git --git-dir=.evil config core.fsmonitor 'touch ${ws.path}/RAN-gitdir'`,
          `echo "gitdir: ../../.evil" > ${D}2/${S}/.git`,
          "echo planted",
        ].join(" && "),
      );
      expect(planted.stdout).toBe("planted\n");
    } finally {
      await sandbox.stop();
    }
    const report = lines.join("\n");
    expect(report).toContain("moved aside d\\xff/.git (created)");
    expect(report).toContain("moved aside d\\xff2/s\\xff/.git (created)");
    expect(existsSync(bytesAt(ws.path, "d", [0xff], "/.git"))).toBe(false);
    expect(existsSync(bytesAt(ws.path, "d", [0xff], "2/s", [0xff], "/.git"))).toBe(false);
    // The owner's plain `git status` runs nothing planted, at the root or in either directory.
    hostGit(ws.path, ["status"]);
    hostGit(ws.path, ["status"], D);
    hostGit(ws.path, ["status"], `${D}2/${S}`);
    expect(readdirSync(ws.path).filter((f) => f.startsWith("RAN-"))).toEqual([]);
    execFileSync("docker", ["rm", "-f", "-v", sandbox.containerId], { stdio: "ignore" });
  });
});
