/**
 * Round 4, finding 3: a devcontainer's image (the workspace's to choose) had its own binaries run as
 * harness's root machinery: PID 1 ran the image's `sleep`, the executor its `python3`, the package
 * cache's keeper its `python3` with DAC_OVERRIDE over the cache. A uid-0 process from the image was
 * never killed or listed and outlived the run. Now an image harness did not build (told by image id,
 * so an image `FROM harness-sandbox` counts as foreign) runs nothing as root: the machinery runs as the
 * commands' uid, the keeper runs in harness's own image, and the run's end removes the container.
 *
 * The image here is harness's own with trojan `python3` and `sleep` first in PATH: each records
 * whether it ran as root and, as root, leaves a marked process behind. Seen from the host: no process
 * of the image outlives the session, none in the container ever had uid 0, the cache volume holds
 * no root mark.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import {
  listPackageCacheVolumes,
  removePackageCacheVolumes,
} from "../../../src/sandbox/docker/package-cache/package-cache-volume.js";
import { skipDocker } from "../../support/docker-available.js";
import { commitTestImage } from "../../support/test-image.js";
import { makeWorkspace, TEST_UID } from "../../support/workspace.js";
import { removeWorkspaceContainers, workspaceContainers } from "../../support/workspace-container.js";
import { loopbackLookup, ORIGIN } from "../egress-fixture.js";

/** What a trojan leaves running as root: found on the host by this argument. */
const MARK_SECONDS = 7000 + (process.pid % 900);
const TAG = `harness-test-trojan:${process.pid}`;

/**
 * A trojan for `real`: as root it leaves `sleep MARK_SECONDS` running (out of any session) and marks
 * every directory the keeper mounts; then it does what `real` does.
 */
function trojan(real: string): string {
  return [
    "#!/bin/sh",
    'if [ "$(id -u)" = 0 ]; then',
    `  (setsid /bin/sleep ${MARK_SECONDS} >/dev/null 2>&1 &)`,
    '  for d in /cache/* /var/cache/harness; do touch "$d/.trojan-root" 2>/dev/null; done',
    "fi",
    `exec ${real} "$@"`,
    "",
  ].join("\n");
}

/** Harness's own image with trojan python3 and sleep in /usr/local/bin (first in PATH). */
function trojanImage(docker: Docker): Promise<string> {
  const script = [
    `printf '%s' '${trojan("/usr/bin/python3")}' > /usr/local/bin/python3`,
    `printf '%s' '${trojan("/bin/sleep")}' > /usr/local/bin/sleep`,
    "chmod 755 /usr/local/bin/python3 /usr/local/bin/sleep",
  ].join(" && ");
  return commitTestImage(docker, TAG, script);
}

/** The marked processes on the host (every container's processes are the host's too). */
function markedProcesses(): string[] {
  const out = execFileSync("ps", ["-eo", "uid=,args="], { encoding: "utf8" });
  return out.split("\n").filter((line) => line.includes(`sleep ${MARK_SECONDS}`));
}

/**
 * Every process in the container (PID 1, the executor, the relay) has the owner's real uid while the
 * session runs; once it has ended, no marked process is left on the host and no container is kept.
 */
async function expectOnlyTheOwnerThenNothing(sandbox: DockerSandbox, workspace: string): Promise<void> {
  const census = await sandbox.exec(
    "for s in /proc/[0-9]*/status; do awk '/^Uid:/ {print $2}' \"$s\" 2>/dev/null; done | sort -u",
  );
  expect(census.exitCode, census.stderr).toBe(0);
  expect(census.stdout.trim().split("\n")).toEqual([String(TEST_UID)]);
  // The executor ran: the image's python3, as the commands' uid.
  expect(sandbox.commandPath).toBe("executor");
  await sandbox.stop();
  expect(markedProcesses()).toEqual([]);
  expect(await workspaceContainers(workspace)).toEqual([]);
}

describe.skipIf(skipDocker)(
  "adversarial: an image's own binaries as harness's machinery",
  { timeout: 240_000 },
  () => {
    const docker = new Docker();
    let image: string;

    beforeAll(async () => {
      image = await trojanImage(docker);
    }, 180_000);

    afterAll(async () => {
      await removePackageCacheVolumes(docker, { uid: TEST_UID }).catch(() => {});
      await docker
        .getImage(TAG)
        .remove({ force: true })
        .catch(() => {});
    });

    for (const isolation of ["bind", "copy"] as const) {
      it(`${isolation} mode: nothing of the image runs as root, and nothing of it outlives the session`, async () => {
        using ws = makeWorkspace("harness-trojan-");
        try {
          const sandbox = await DockerSandbox.open({ workspace: ws.path, image, isolation });
          await expectOnlyTheOwnerThenNothing(sandbox, ws.path);
        } finally {
          await removeWorkspaceContainers(ws.path);
        }
      });
    }

    it("allowlist mode: the relay is not the image's python3 as root either", async () => {
      using ws = makeWorkspace("harness-trojan-relay-");
      try {
        const sandbox = await DockerSandbox.open({
          workspace: ws.path,
          image,
          egress: { allowHosts: [`${ORIGIN}:9`], allowPrivate: true },
          egressLookup: loopbackLookup,
        });
        expect(sandbox.description.network).toBe("allowlist");
        await expectOnlyTheOwnerThenNothing(sandbox, ws.path);
      } finally {
        await removeWorkspaceContainers(ws.path);
      }
    });

    it("the package cache's keeper never runs the image's python3 as root", async () => {
      using ws = makeWorkspace("harness-trojan-cache-");
      try {
        const sandbox = await DockerSandbox.open({
          workspace: ws.path,
          image,
          packageCache: { maxBytes: 64 * 1024 ** 2 },
        });
        await sandbox.exec("true");
        await sandbox.stop();
        const volumes = await listPackageCacheVolumes(docker, { uid: TEST_UID });
        expect(volumes.length).toBeGreaterThan(0);
        for (const { name } of volumes) {
          const { Mountpoint } = await docker.getVolume(name).inspect();
          expect(existsSync(join(Mountpoint, ".trojan-root")), name).toBe(false);
        }
        expect(markedProcesses()).toEqual([]);
      } finally {
        await removeWorkspaceContainers(ws.path);
      }
    });
  },
);
