/**
 * The end of a run leaves nothing of harness's machinery in a long-lived container: the executor
 * exits, and so does the process it forked ahead for the next call (its spare). Seen from the host
 * (`docker top`), after several harness processes used the same container one after another.
 */
import Docker from "dockerode";
import { describe, expect, it } from "vitest";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import { skipDocker } from "../support/docker-available.js";
import { makeWorkspace } from "../support/workspace.js";
import { removeWorkspaceContainers } from "../support/workspace-container.js";

async function processes(id: string): Promise<string[]> {
  const top = (await new Docker().getContainer(id).top({ ps_args: "-eo pid,args" })) as {
    Processes?: string[][];
  };
  return (top.Processes ?? []).map((row) => row.join(" "));
}

describe.skipIf(skipDocker)("the executor at the end of a run", () => {
  it("leaves only PID 1 and its sleep behind, run after run", { timeout: 120_000 }, async () => {
    using ws = makeWorkspace();
    try {
      let id = "";
      for (let run = 0; run < 3; run += 1) {
        const sandbox = await DockerSandbox.open({ workspace: ws.path });
        id = sandbox.containerId;
        for (let call = 0; call < 2; call += 1) expect((await sandbox.exec("true")).exitCode).toBe(0);
        await sandbox.stop();
      }
      await expect
        .poll(async () => (await processes(id)).filter((p) => p.includes("harness-executor")), {
          timeout: 10_000,
          interval: 100,
        })
        .toEqual([]);
      expect(await processes(id)).toHaveLength(2);
    } finally {
      await removeWorkspaceContainers(ws.path);
    }
  });
});
