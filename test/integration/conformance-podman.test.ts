import { beforeAll, describe, expect, it } from "vitest";
import {
  listHarnessContainers,
  removeHarnessContainers,
} from "../../src/sandbox/docker/container/container-registry.js";
import { DockerSandbox, type DockerSandboxOptions } from "../../src/sandbox/docker/docker-sandbox.js";
import { detectEngineKind } from "../../src/sandbox/docker/engine/engine-kind.js";
import { conformanceSuite } from "../support/conformance.js";
import { podman, podmanSandboxImage, skipPodman } from "../support/podman-available.js";
import { makeWorkspace } from "../support/workspace.js";

/**
 * The conformance set on rootful Podman through its Docker-compatible socket
 * (scripts/ensure-podman.sh), plus what `harness ps` / `harness rm` rely on: labels and listing.
 */
describe.skipIf(skipPodman)("Podman (rootful, Docker-compatible API)", { timeout: 120_000 }, () => {
  const engine = podman as NonNullable<typeof podman>;
  let image = "";
  const open = (workspace: string, extra?: Partial<DockerSandboxOptions>) =>
    DockerSandbox.open({ workspace, docker: engine, image, removeOnStop: true, ...extra });

  beforeAll(async () => {
    image = await podmanSandboxImage(engine);
  }, 600_000);

  it("is detected as Podman, and its tmpfs mounts belong to the sandbox user", async () => {
    expect(await detectEngineKind(engine)).toBe("podman");
    using ws = makeWorkspace();
    await using sandbox = await open(ws.path);
    const ids = sandbox.resolvedSettings.user.split(":");
    const mounts = (await sandbox.exec("grep -E ' (/home/sandbox|/run/harness) ' /proc/mounts")).stdout;
    const lines = mounts.trim().split("\n");
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line).toMatch(/ tmpfs rw,nosuid,nodev,/);
      expect(line).toContain(`mode=700,uid=${ids[0]},gid=${ids[1]}`);
    }
    expect((await sandbox.exec("touch ~/x && echo ok")).stdout).toBe("ok\n");
  });

  it("finds its containers by label, lists them and removes them (harness ps / rm)", async () => {
    using ws = makeWorkspace();
    const sandbox = await open(ws.path, { removeOnStop: false });
    await sandbox.stop();
    const listed = await listHarnessContainers(engine, sandbox.resolvedSettings.workspace);
    expect(listed.map((c) => c.id)).toEqual([sandbox.containerId.slice(0, 12)]);
    expect(listed[0]?.state).toBe("running");
    const removed = await removeHarnessContainers(engine, listed);
    expect(removed.map((c) => c.id)).toEqual([sandbox.containerId.slice(0, 12)]);
    expect(await listHarnessContainers(engine, sandbox.resolvedSettings.workspace)).toEqual([]);
  });

  it("applies harness's seccomp profile (set-id bits refused) and recreates a removed container", async () => {
    using ws = makeWorkspace();
    await using sandbox = await open(ws.path);
    expect((await sandbox.exec("grep Seccomp: /proc/self/status")).stdout).toMatch(/Seccomp:\s+2/);
    const setId = await sandbox.exec("touch f && chmod u+s f; stat -c %A f");
    expect(setId.stderr).toMatch(/Operation not permitted/);
    expect(setId.stdout).toBe("-rw-r--r--\n");
    await sandbox.exec("cd /tmp");
    const before = sandbox.containerId;
    await engine.getContainer(before).remove({ force: true });
    const next = await sandbox.exec("pwd");
    expect(next.stdout).toBe("/workspace\n");
    expect(next.notices.join("\n")).toMatch(/recreated/);
    expect(sandbox.containerId).not.toBe(before);
  });

  conformanceSuite("podman/rootful", open);
});
