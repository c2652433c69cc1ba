import { describe, expect, it } from "vitest";
import { LABEL_WORKSPACE } from "../../src/sandbox/docker/container/labels.js";
import { podmanSeccompProfilePath } from "../../src/sandbox/docker/container/podman-seccomp.js";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import {
  engineSettings,
  podmanHostInfo,
  ROOTLESS_LIMITS_FIX,
  rootlessLimitsProblem,
} from "../../src/sandbox/docker/engine/engine-kind.js";
import {
  BASE_IMAGE,
  PODMAN_ROOTLESS_SOCKET,
  podmanRootless,
  skipPodmanRootless,
} from "../support/podman-rootless-available.js";
import { runCli } from "../support/run-cli.js";
import { makeWorkspace } from "../support/workspace.js";

/**
 * Rootless Podman (scripts/ensure-podman-rootless.sh). Where it cannot limit memory, pids and cpu
 * (cgroup v1, or v2 without delegated controllers: it drops the limits without a warning in the API),
 * harness refuses it at open in one line and creates no container; where it can, it is accepted.
 * `--image` with the base image keeps the sandbox image build (which needs Debian's mirror) out of it.
 */
describe.skipIf(skipPodmanRootless)("Podman rootless", { timeout: 120_000 }, () => {
  const engine = podmanRootless as NonNullable<typeof podmanRootless>;

  it("is refused in one line, before any container, when it cannot apply the limits", async () => {
    const info = await podmanHostInfo(engine);
    expect(info.host?.security?.rootless).toBe(true);
    const problem = rootlessLimitsProblem(info);
    if (problem === undefined) {
      // cgroup v2 with memory, pids and cpu delegated: nothing to refuse.
      expect((await engineSettings(engine, podmanSeccompProfilePath)).kind).toBe("podman");
      return;
    }
    const line = `${problem}: ${ROOTLESS_LIMITS_FIX}`;
    expect(line).toMatch(/^rootless Podman here cannot apply the sandbox's (memory|pids|cpu)/);
    using ws = makeWorkspace();
    await expect(
      DockerSandbox.open({ workspace: ws.path, docker: engine, image: BASE_IMAGE, removeOnStop: true }),
    ).rejects.toThrow(line);
    const cli = await runCli(["exec", "--workspace", ws.path, "--image", BASE_IMAGE, "--", "true"], {
      env: { DOCKER_HOST: `unix://${PODMAN_ROOTLESS_SOCKET}` },
    });
    expect(cli.code).toBe(1);
    expect(cli.stderr).toBe(`harness: ${line}\n`);
    const labelled = await engine.listContainers({ all: true, filters: { label: [LABEL_WORKSPACE] } });
    expect(labelled).toEqual([]);
  });
});
