/**
 * The container's Docker health check (CIS 5.26), on real Docker: the engine has it, and its probe,
 * run as Docker runs it (the CMD form, as the container's user), says healthy in an ordinary
 * sandbox and unhealthy when the pid limit leaves commands no room.
 */
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { healthCheck } from "../../src/sandbox/docker/container/container-spec.js";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import { runSimpleExec } from "../../src/sandbox/docker/exec/exec-helper.js";
import { skipDocker } from "../support/docker-available.js";
import { makeWorkspace } from "../support/workspace.js";

describe.skipIf(skipDocker)("the sandbox container's health check", { timeout: 120_000 }, () => {
  it("is set on the container and passes, and fails once the pid limit is nearly used up", async () => {
    using ws = makeWorkspace();
    await using sandbox = await DockerSandbox.open({ workspace: ws.path, removeOnStop: true, pidsLimit: 64 });
    const container = new Docker().getContainer(sandbox.containerId);
    const info = await container.inspect();
    expect(info.Config.Healthcheck).toEqual(healthCheck());
    // Docker probes first after one interval (5 min): until then it is "starting", never unhealthy.
    expect(info.State.Health?.Status).toBe("starting");

    const [form, ...probe] = info.Config.Healthcheck?.Test ?? [];
    expect(form).toBe("CMD");
    const user = sandbox.resolvedSettings.user;
    await expect(runSimpleExec(container, probe, user)).resolves.toBe("");

    // 58 sleeps, the wrapper of the call and PID 1's two processes: fewer than 8 pids left.
    const filled = await sandbox.exec("for i in $(seq 58); do sleep 300 & done");
    expect(filled.exitCode).toBe(0);
    await expect(runSimpleExec(container, probe, user)).rejects.toThrow(/exited with 1/);
    await sandbox.exec("pkill -f '^sleep 300$'; sleep 0.3");
    await expect(runSimpleExec(container, probe, user)).resolves.toBe("");
  });
});
