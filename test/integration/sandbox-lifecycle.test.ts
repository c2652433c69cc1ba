import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import {
  contextHash,
  ensureSandboxImage,
  sandboxContextDir,
} from "../../src/sandbox/docker/container/image.js";
import { LABEL_WORKSPACE } from "../../src/sandbox/docker/container/labels.js";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import { connectDocker } from "../../src/sandbox/docker/engine/docker-client.js";
import { skipDocker } from "../support/docker-available.js";
import { makeWorkspace } from "../support/workspace.js";

describe.skipIf(skipDocker)("sandbox container lifecycle", () => {
  it("reuses the workspace's container, and replaces it when the settings change", async () => {
    using ws = makeWorkspace();
    const first = await DockerSandbox.open({ workspace: ws.path });
    expect(first.acquired).toBe("created");
    await first.exec("sleep 300 > /dev/null 2>&1 &");
    const second = await DockerSandbox.open({ workspace: ws.path });
    expect(second.acquired).toBe("reused");
    expect(second.containerId).toBe(first.containerId);
    expect((await second.exec("ps -eo args")).stdout).toContain("sleep 300");
    await using third = await DockerSandbox.open({ workspace: ws.path, pidsLimit: 100, removeOnStop: true });
    expect(third.acquired).toBe("created");
    expect(third.containerId).not.toBe(first.containerId);
    const all = await new Docker().listContainers({
      all: true,
      filters: { label: [`${LABEL_WORKSPACE}=${ws.path}`] },
    });
    expect(all.map((c) => c.Id)).toEqual([third.containerId]);
  });

  it("starts a stopped container again instead of creating a new one", async () => {
    using ws = makeWorkspace();
    const first = await DockerSandbox.open({ workspace: ws.path });
    await new Docker().getContainer(first.containerId).stop({ t: 0 });
    await using second = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true });
    expect(second.acquired).toBe("started");
    expect(second.containerId).toBe(first.containerId);
  });

  it("runs any existing image given with --image (it only needs /bin/sh)", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({
      workspace: ws.path,
      image: "debian:bookworm-slim",
      removeOnStop: true,
    });
    const info = await new Docker().getContainer(sandbox.containerId).inspect();
    expect(info.Config.Image).toBe("debian:bookworm-slim");
    expect(await sandbox.exec("cd /tmp && pwd; echo $0")).toMatchObject({ exitCode: 0 });
    expect((await sandbox.exec("pwd")).stdout).toBe("/tmp\n");
  });

  it("tags the image by a hash of sandbox/: an edit rebuilds, no edit never does", async () => {
    const docker = await connectDocker();
    const dir = mkdtempSync(join(tmpdir(), "harness-ctx-"));
    try {
      cpSync(sandboxContextDir(), dir, { recursive: true });
      writeFileSync(join(dir, "marker.txt"), `edited ${Date.now()}\n`);
      const hash = contextHash(dir);
      expect(hash).not.toBe(contextHash(sandboxContextDir()));
      const progress: string[] = [];
      const tag = await ensureSandboxImage(docker, (line) => progress.push(line), dir);
      expect(tag).toBe(`harness-sandbox:${hash}`);
      expect(progress.join("\n")).toMatch(/Successfully tagged|naming to/);
      const again: string[] = [];
      expect(await ensureSandboxImage(docker, (line) => again.push(line), dir)).toBe(tag);
      expect(again).toEqual([]);
      await docker.getImage(tag).remove({ force: true });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("builds the minimal target under its own tag: harness's machinery, none of the toolchains", async () => {
    const docker = await connectDocker();
    const tag = await ensureSandboxImage(docker, () => {}, sandboxContextDir(), "minimal");
    expect(tag).toBe(`harness-sandbox:${contextHash(sandboxContextDir())}-minimal`);
    using ws = makeWorkspace();
    await using minimal = await DockerSandbox.open({ workspace: ws.path, image: tag, removeOnStop: true });
    const tools =
      "for t in python3 git node go cargo javac mvn gcc; do command -v $t >/dev/null && echo $t; done";
    expect((await minimal.exec(tools)).stdout).toBe("python3\ngit\n");
    using other = makeWorkspace();
    await using full = await DockerSandbox.open({ workspace: other.path, removeOnStop: true });
    expect((await full.exec(tools)).stdout).toBe("python3\ngit\nnode\ngo\ncargo\njavac\nmvn\ngcc\n");
  });

  it("reports a failed build with the tail of its log", async () => {
    const docker = await connectDocker();
    const dir = mkdtempSync(join(tmpdir(), "harness-ctx-"));
    try {
      writeFileSync(join(dir, "Dockerfile"), "FROM debian:bookworm-slim\nRUN echo about-to-fail && exit 7\n");
      await expect(ensureSandboxImage(docker, () => {}, dir)).rejects.toThrow(
        /building the sandbox image failed[\s\S]*about-to-fail/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
