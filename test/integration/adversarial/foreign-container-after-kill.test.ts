/**
 * A container of an image harness did not build is removed by the last harness process out, so that
 * nothing of the image keeps running (round 4, finding 3). A harness killed outright (SIGKILL, the
 * OOM killer) cannot remove it; the next session on the workspace used to reuse it, and what the
 * killed session left running went on beside the new one, unseen by its checks. Now the next open
 * removes such a container once its creator is gone and no live harness holds it, and makes a new one.
 *
 * Variants: a job the killed run left in the background, one in a session of its own, and a second
 * session still attached (its container must then be kept: its owner is alive). The killed call's
 * own command ends with harness (the executor ends its calls when its stream closes).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { skipDocker } from "../../support/docker-available.js";
import { useFakeApi } from "../../support/fake-api-fixture.js";
import { toolUseReply } from "../../support/fake-messages-api.js";
import { runCli, spawnCli } from "../../support/run-cli.js";
import { commitTestImage } from "../../support/test-image.js";
import { makeWorkspace } from "../../support/workspace.js";
import {
  removeWorkspaceContainers,
  workspaceContainers,
  workspaceProcesses,
} from "../../support/workspace-container.js";

const TAG = `harness-test-foreign:${process.pid}`;
/** Marks the killed session's processes: found by this argument. */
const MARK = 5000 + (process.pid % 900);

/** Harness's own image with one file added: by image id, not harness's own. */
function foreignImage(docker: Docker): Promise<string> {
  return commitTestImage(docker, TAG, "echo foreign > /etc/foreign-image");
}

async function until(check: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

describe.skipIf(skipDocker)(
  "adversarial: a foreign image's container after harness is killed",
  { timeout: 240_000 },
  () => {
    const docker = new Docker();
    const fake = useFakeApi();
    let image: string;

    beforeAll(async () => {
      image = await foreignImage(docker);
    }, 180_000);

    afterAll(async () => {
      await docker
        .getImage(TAG)
        .remove({ force: true })
        .catch(() => {});
    });

    /**
     * A `run` whose first call leaves `job` running (jobs outlive their call, as a server the model
     * starts does), SIGKILLed in its second call: the job is still running in the container after.
     */
    async function killedSession(ws: string, job: string): Promise<string> {
      fake.api.enqueue(toolUseReply("bash", { command: job }, "Starting it.", "toolu_job"));
      fake.api.enqueue(
        toolUseReply("bash", { command: "touch started; sleep 600" }, "Waiting.", "toolu_wait"),
      );
      const killed = spawnCli(["run", "-w", ws, "--image", image, "--timeout", "600", "a task"], {
        env: fake.env,
      });
      await until(() => existsSync(join(ws, "started")), "the killed session's second call to start");
      killed.child.kill("SIGKILL");
      await killed.done;
      const [left] = await workspaceContainers(ws);
      if (left === undefined) throw new Error("the killed session left no container: nothing to check");
      expect((await workspaceProcesses(ws)).some((line) => line.includes(`sleep ${MARK}`))).toBe(true);
      return left;
    }

    for (const [name, job] of [
      ["a background job", `sleep ${MARK} >/dev/null 2>&1 &`],
      ["a job in a session of its own", `(setsid sleep ${MARK} >/dev/null 2>&1 &)`],
    ] as const) {
      it(`the next session does not reuse the container: ${name} the killed run left is gone`, async () => {
        using ws = makeWorkspace("harness-foreign-kill-");
        try {
          const left = await killedSession(ws.path, job);
          const next = await runCli(["exec", "-w", ws.path, "--image", image, "--", "ps -eo args"]);
          expect(next.code, next.stderr).toBe(0);
          expect(next.stdout).not.toContain(`sleep ${MARK}`);
          expect(await workspaceContainers(ws.path)).not.toContain(left);
          // That session ended as the last one out: nothing of the image is left.
          expect(await workspaceContainers(ws.path)).toEqual([]);
        } finally {
          await removeWorkspaceContainers(ws.path);
        }
      });
    }

    it("a container whose session is alive is used, not removed", async () => {
      using ws = makeWorkspace("harness-foreign-alive-");
      const first = spawnCli([
        "exec",
        "-w",
        ws.path,
        "--image",
        image,
        "--timeout",
        "600",
        "--",
        `touch started; sleep ${MARK}; true`,
      ]);
      try {
        await until(() => existsSync(join(ws.path, "started")), "the first session's command to start");
        const [held] = await workspaceContainers(ws.path);
        const second = await runCli(["exec", "-w", ws.path, "--image", image, "--", "ps -eo args"]);
        expect(second.code, second.stderr).toBe(0);
        expect(second.stdout).toContain(`sleep ${MARK}`);
        expect(await workspaceContainers(ws.path)).toEqual([held]);
      } finally {
        first.child.kill("SIGTERM");
        await first.done;
        await removeWorkspaceContainers(ws.path);
      }
    });
  },
);
