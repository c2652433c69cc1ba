import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import { copyOf } from "../../support/copied.js";
import { skipDocker } from "../../support/docker-available.js";
import { makeWorkspace, TEST_GID, TEST_UID } from "../../support/workspace.js";

const DIRS = 12;
const ROUNDS = 2;

/**
 * A process left running in the workspace's bind-mode container (harness killed, or a second
 * harness) that swaps each directory with a symlink to a host directory and back with
 * renameat2(RENAME_EXCHANGE), in a loop with no fork: every path is a directory half of the time.
 */
const racer = (outside: string) => `
for i in $(seq 0 ${DIRS - 1}); do ln -s ${outside} d$i.l; done
python3 -c '
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
names = [(b"d%d" % i, b"d%d.l" % i) for i in range(${DIRS})]
while True:
    for a, b in names:
        libc.renameat2(-100, a, -100, b, 2)
' >/dev/null 2>&1 &
sleep 1; echo racing`;

describe.skipIf(skipDocker)("adversarial: racing copy mode from a bind sandbox of the same workspace", () => {
  it("reads no host file through a swapped directory and writes nothing outside the workspace", async () => {
    using ws = makeWorkspace();
    using outside = makeWorkspace("harness-outside-");
    const secret = `SECRET-${Math.random().toString(36).slice(2)}`;
    // Root-only, as /etc/shadow is: harness (root here) could read it, the sandbox user cannot.
    writeFileSync(join(outside.path, "secret"), `${secret}\n`, { mode: 0o600 });
    execFileSync("chown", ["0:0", join(outside.path, "secret")]);
    for (let i = 0; i < DIRS; i++) {
      mkdirSync(join(ws.path, `d${i}`));
      writeFileSync(join(ws.path, `d${i}/f`), "workspace file\n");
    }
    if (process.getuid?.() === 0) execFileSync("chown", ["-R", `${TEST_UID}:${TEST_GID}`, ws.path]);
    const lines: string[] = [];
    const startRacer = async () => {
      // Left open on purpose, as by a harness that was killed: its processes keep running.
      const bind = await DockerSandbox.open({ workspace: ws.path });
      expect((await bind.exec(racer(outside.path))).stdout).toBe("racing\n");
      return bind.containerId;
    };
    let bindId = "";
    try {
      for (let round = 0; round < ROUNDS; round++) {
        bindId = await startRacer();
        await using copy = await DockerSandbox.open({
          workspace: ws.path,
          isolation: "copy",
          onProgress: (line) => lines.push(line),
        });
        const read = await copy.exec("grep -rl SECRET .");
        expect(read.stdout).toBe("");
        await copy.exec(`for i in $(seq 0 ${DIRS - 1}); do echo new > d$i/new-${round}.txt; done`);
        await startRacer();
        const changes = await copyOf(copy).exportChanges();
        await copyOf(copy).applyChanges(changes);
        expect(readdirSync(outside.path)).toEqual(["secret"]);
      }
    } finally {
      if (bindId) execFileSync("docker", ["rm", "-f", bindId], { stdio: "ignore" });
    }
    expect(lines.join("\n")).toMatch(/stopped harness-.*, a bind-mode sandbox of this workspace/);
  });
});
