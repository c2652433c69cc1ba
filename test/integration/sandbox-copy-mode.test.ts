import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chownSync, lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import {
  LABEL_OWNER_HOST,
  LABEL_OWNER_PID,
  LABEL_WORKSPACE,
} from "../../src/sandbox/docker/container/labels.js";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import { LABEL_ISOLATION } from "../../src/sandbox/docker/isolation/labels/copy-container-labels.js";
import { copyOf } from "../support/copied.js";
import { skipDocker } from "../support/docker-available.js";
import { makeWorkspace, TEST_GID, TEST_UID } from "../support/workspace.js";

/** Writes a file owned like the workspace (the sandbox user when the tests run as root). */
function put(root: string, path: string, content: string): void {
  writeFileSync(join(root, path), content);
  if (process.getuid?.() === 0) chownSync(join(root, path), TEST_UID, TEST_GID);
}

function sha(path: string): string {
  return createHash("sha256").update(readFileSync(path)).digest("hex");
}

const gone = (path: string) => expect(() => lstatSync(path)).toThrow();

describe.skipIf(skipDocker)("--isolation copy", () => {
  it("never mounts the workspace: its /workspace is an anonymous volume holding a copy", async () => {
    using ws = makeWorkspace();
    put(ws.path, "a.txt", "from the host\n");
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, isolation: "copy" });
    const info = await new Docker().getContainer(sandbox.containerId).inspect();
    expect(info.Mounts.filter((m) => m.Type === "bind")).toEqual([]);
    expect(info.HostConfig.Binds ?? []).toEqual([]);
    expect(info.Mounts.map((m) => [m.Type, m.Destination])).toEqual([["volume", "/workspace"]]);
    expect(JSON.stringify(info.Mounts)).not.toContain(ws.path);
    expect(info.Config.Labels?.[LABEL_ISOLATION]).toBe("copy");
    expect(info.Config.Labels?.[LABEL_WORKSPACE]).toBe(`copy:${ws.path}`);
    const owner = `${statSync(ws.path).uid}:${statSync(ws.path).gid}`;
    const result = await sandbox.exec("cat a.txt && touch new && stat -c '%u:%g' /workspace new");
    expect(result.stdout).toBe(`from the host\n${owner}\n${owner}\n`);
  });

  it("keeps changes off the host until applied, lists A/M/D, then applies them", async () => {
    using ws = makeWorkspace();
    put(ws.path, "keep.txt", "same\n");
    put(ws.path, "mod.txt", "one\ntwo\nthree\n");
    put(ws.path, "del.txt", "bye\n");
    mkdirSync(join(ws.path, ".harness"));
    put(ws.path, ".harness/state", "never copied\n");
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, isolation: "copy" });
    const run = await sandbox.exec(
      "ls -A .harness 2>&1; sed -i s/two/TWO/ mod.txt && rm del.txt && mkdir -p src && echo 'print(1)' > src/new.py && chmod 755 keep.txt",
    );
    expect(run.stdout).toContain("No such file");
    expect(readFileSync(join(ws.path, "mod.txt"), "utf8")).toBe("one\ntwo\nthree\n");
    expect(readFileSync(join(ws.path, "del.txt"), "utf8")).toBe("bye\n");
    gone(join(ws.path, "src"));

    const changes = await copyOf(sandbox).exportChanges();
    expect(changes.summary.split("\n")).toEqual([
      "D del.txt",
      "M keep.txt (mode 644 -> 755)",
      "M mod.txt",
      "A src/",
      "A src/new.py",
      "5 changes: 2 added, 2 modified, 1 deleted",
      "",
    ]);
    expect(changes.diff).toContain(
      "--- a/mod.txt\n+++ b/mod.txt\n@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n",
    );
    expect(changes.diff).toContain("--- /dev/null\n+++ b/src/new.py\n@@ -0,0 +1 @@\n+print(1)\n");
    expect(readFileSync(join(ws.path, "mod.txt"), "utf8")).toBe("one\ntwo\nthree\n");

    const applied = await copyOf(sandbox).applyChanges(changes);
    expect(applied.refused).toEqual([]);
    expect(applied.deleted).toEqual(["del.txt"]);
    expect(applied.written.sort()).toEqual(["keep.txt", "mod.txt", "src", "src/new.py"]);
    expect(readFileSync(join(ws.path, "mod.txt"), "utf8")).toBe("one\nTWO\nthree\n");
    expect(readFileSync(join(ws.path, "src/new.py"), "utf8")).toBe("print(1)\n");
    expect(statSync(join(ws.path, "keep.txt")).mode & 0o777).toBe(0o755);
    expect(readFileSync(join(ws.path, ".harness/state"), "utf8")).toBe("never copied\n");
    gone(join(ws.path, "del.txt"));
  });

  it("refuses a symlink planted at /etc/passwd when applying, and leaves the host file alone", async () => {
    using ws = makeWorkspace();
    symlinkSync("keep.txt", join(ws.path, "inside-link"));
    put(ws.path, "keep.txt", "k\n");
    const passwd = sha("/etc/passwd");
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, isolation: "copy" });
    await sandbox.exec(
      "ln -s /etc/passwd evil && ln -sfn /etc/passwd inside-link && mkdir d && ln -s ../../etc d/up && echo ok > fine.txt",
    );
    const changes = await copyOf(sandbox).exportChanges();
    expect(changes.summary).toContain("A evil -> /etc/passwd");
    expect(changes.summary).toContain("M inside-link -> /etc/passwd");
    const applied = await copyOf(sandbox).applyChanges(changes);
    expect(applied.refused).toEqual(
      [
        { path: "d/up", reason: "symlink points outside the workspace (../../etc)" },
        { path: "evil", reason: "symlink to an absolute path (/etc/passwd)" },
        { path: "inside-link", reason: "symlink to an absolute path (/etc/passwd)" },
      ].sort((a, b) => (a.path < b.path ? -1 : 1)),
    );
    expect(applied.written.sort()).toEqual(["d", "fine.txt"]);
    gone(join(ws.path, "evil"));
    gone(join(ws.path, "d/up"));
    expect(lstatSync(join(ws.path, "inside-link")).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(ws.path, "inside-link"), "utf8")).toBe("k\n");
    expect(sha("/etc/passwd")).toBe(passwd);
  });

  it("never deletes or overwrites what the user changed on the host during the run", async () => {
    using ws = makeWorkspace();
    put(ws.path, "shared.txt", "v1\n");
    put(ws.path, "theirs.txt", "t\n");
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, isolation: "copy" });
    await sandbox.exec("echo sandbox > shared.txt && echo sandbox > theirs.txt");
    put(ws.path, "shared.txt", "edited on the host meanwhile\n");
    put(ws.path, "notes.txt", "created on the host meanwhile\n");
    const changes = await copyOf(sandbox).exportChanges();
    expect(changes.changes.map((c) => `${c.kind} ${c.path}`)).toEqual(["M shared.txt", "M theirs.txt"]);
    expect(changes.conflicts).toEqual(["shared.txt"]);
    expect(changes.summary).toContain("! shared.txt: also changed on the host during the run");
    const applied = await copyOf(sandbox).applyChanges(changes);
    expect(applied.written).toEqual(["theirs.txt"]);
    expect(applied.refused).toEqual([
      { path: "shared.txt", reason: "changed on the host during the run; left as it is" },
    ]);
    expect(readFileSync(join(ws.path, "shared.txt"), "utf8")).toBe("edited on the host meanwhile\n");
    expect(readFileSync(join(ws.path, "notes.txt"), "utf8")).toBe("created on the host meanwhile\n");
    expect(readFileSync(join(ws.path, "theirs.txt"), "utf8")).toBe("sandbox\n");
  });

  it("is removed with its volume at the end, and a bind-mode run of the same workspace never touches it", async () => {
    using ws = makeWorkspace();
    const docker = new Docker();
    const copy = await DockerSandbox.open({ workspace: ws.path, isolation: "copy" });
    const volume = (await docker.getContainer(copy.containerId).inspect()).Mounts[0]?.Name ?? "";
    expect(volume).not.toBe("");
    await using bind = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    expect(bind.containerId).not.toBe(copy.containerId);
    expect((await docker.getContainer(copy.containerId).inspect()).State.Running).toBe(true);
    expect((await copy.exec("true")).exitCode).toBe(0);
    await copy.stop();
    await expect(docker.getContainer(copy.containerId).inspect()).rejects.toMatchObject({ statusCode: 404 });
    await expect(docker.getVolume(volume).inspect()).rejects.toMatchObject({ statusCode: 404 });
    expect((await bind.exec("true")).exitCode).toBe(0);
  });

  it("removes copy-mode containers of any workspace whose harness process is gone, with their volumes, at open", async () => {
    using wsA = makeWorkspace();
    using wsB = makeWorkspace();
    const docker = new Docker();
    await using first = await DockerSandbox.open({ workspace: wsA.path, isolation: "copy" });
    const info = await docker.getContainer(first.containerId).inspect();
    // A harness that was killed (a second Ctrl-C) before removing its container: same host, pid gone.
    const deadPid = spawnSync("true").pid ?? 0;
    const leftBehind = async (labels: Record<string, string>) => {
      const container = await docker.createContainer({
        Image: info.Config.Image,
        Cmd: info.Config.Cmd,
        User: info.Config.User,
        Labels: { ...info.Config.Labels, ...labels },
        Volumes: { "/workspace": {} },
        HostConfig: { NetworkMode: "none", CapDrop: ["ALL"], ReadonlyRootfs: true },
      });
      await container.start();
      return container;
    };
    const orphan = await leftBehind({ [LABEL_OWNER_PID]: String(deadPid) });
    const volume = (await orphan.inspect()).Mounts[0]?.Name ?? "";
    expect(volume).not.toBe("");
    // Another machine's harness on the same engine: its pids mean nothing here, so it is left alone.
    const foreign = await leftBehind({ [LABEL_OWNER_PID]: String(deadPid), [LABEL_OWNER_HOST]: "elsewhere" });
    try {
      await using second = await DockerSandbox.open({ workspace: wsB.path, isolation: "copy" });
      await expect(orphan.inspect()).rejects.toMatchObject({ statusCode: 404 });
      await expect(docker.getVolume(volume).inspect()).rejects.toMatchObject({ statusCode: 404 });
      // This process still owns the first one: it stays and works.
      expect((await first.exec("true")).exitCode).toBe(0);
      expect((await second.exec("true")).exitCode).toBe(0);
      expect((await foreign.inspect()).State.Running).toBe(true);
    } finally {
      await foreign.remove({ force: true, v: true });
      await orphan.remove({ force: true, v: true }).catch(() => {});
    }
  });

  it("refuses a workspace over the copy limit before creating anything, naming the size", async () => {
    using ws = makeWorkspace();
    put(ws.path, "big.bin", "x".repeat(5000));
    await expect(
      DockerSandbox.open({ workspace: ws.path, isolation: "copy", copyLimitBytes: 4096 }),
    ).rejects.toThrow(/holds 4\.9 KiB \(5000 bytes\) of files, over the copy limit of 4\.0 KiB/);
    const left = await new Docker().listContainers({
      all: true,
      filters: { label: [`${LABEL_WORKSPACE}=copy:${ws.path}`] },
    });
    expect(left).toEqual([]);
  });
});
