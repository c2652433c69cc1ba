/**
 * The package cache's volume on a real engine: how it is mounted (read back with `docker inspect`,
 * checked by the CIS evaluation), what a command can and cannot do in it, and the volume's labels.
 * A uid of this test run's own, so its volume is its own.
 */
import { chownSync, realpathSync } from "node:fs";
import Docker from "dockerode";
import { afterAll, describe, expect, it } from "vitest";
import { collectCisInput, evaluateCis } from "../../scripts/cis-checks.js";
import { PACKAGE_CACHE_DIR } from "../../src/sandbox/docker/container/container-spec.js";
import { LABEL_WORKSPACE } from "../../src/sandbox/docker/container/labels.js";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import {
  LABEL_PACKAGE_CACHE,
  packageCacheVolumeName,
} from "../../src/sandbox/docker/package-cache/package-cache-volume.js";
import { skipDocker } from "../support/docker-available.js";
import { makeWorkspace } from "../support/workspace.js";

const UID = 40_000 + (process.pid % 20_000);

describe.skipIf(skipDocker)("the package cache's volume", { timeout: 180_000 }, () => {
  const docker = new Docker();
  const volumes: string[] = [];
  afterAll(async () => {
    for (const volume of volumes)
      await docker
        .getVolume(volume)
        .remove()
        .catch(() => {});
  });

  for (const isolation of ["bind", "copy"] as const) {
    it(`${isolation} mode: mounted read-write, the user's own, no CIS check fails, no set-id file, no device`, async () => {
      using ws = makeWorkspace();
      chownSync(ws.path, UID, UID);
      const VOLUME = packageCacheVolumeName(UID, realpathSync(ws.path));
      volumes.push(VOLUME);
      await using sandbox = await DockerSandbox.open({
        workspace: ws.path,
        isolation,
        removeOnStop: true,
        packageCache: { maxBytes: 64 * 1024 ** 2 },
      });
      const info = await docker.getContainer(sandbox.containerId).inspect();
      const mount = info.Mounts.find((m) => m.Destination === PACKAGE_CACHE_DIR);
      expect(mount).toMatchObject({ Type: "volume", Name: VOLUME, RW: true });
      const volume = await docker.getVolume(VOLUME).inspect();
      expect(volume.Labels).toMatchObject({
        "dev.harness.managed": "true",
        [LABEL_PACKAGE_CACHE]: `${UID}`,
        [LABEL_WORKSPACE]: realpathSync(ws.path),
      });

      const input = await collectCisInput(docker, sandbox.containerId, (command) => sandbox.exec(command));
      expect(evaluateCis(input).filter((r) => r.status === "FAIL")).toEqual([]);

      const owner = await sandbox.exec(`stat -c '%u:%g %a' ${PACKAGE_CACHE_DIR}; id -u`);
      expect(owner.stdout).toBe(`${UID}:${UID} 700\n${UID}\n`);
      const env = await sandbox.exec("env | sort | grep -E '^(npm_config_cache|PIP_CACHE_DIR)='");
      expect(env.exitCode).toBe(0);
      expect(env.stdout).toBe(
        `PIP_CACHE_DIR=${PACKAGE_CACHE_DIR}/pip\nnpm_config_cache=${PACKAGE_CACHE_DIR}/npm\n`,
      );
      // No nosuid/nodev on a volume mount (the API takes none), and still no set-id file or device:
      // the seccomp profile refuses the modes, no capability allows mknod.
      const setid = await sandbox.exec(
        `cp /bin/sh ${PACKAGE_CACHE_DIR}/sh && chmod u+s ${PACKAGE_CACHE_DIR}/sh; chmod g+s ${PACKAGE_CACHE_DIR}/sh; stat -c %a ${PACKAGE_CACHE_DIR}/sh`,
      );
      expect(setid.stdout.trim().split("\n").at(-1)).toBe("755");
      const device = await sandbox.exec(`mknod ${PACKAGE_CACHE_DIR}/null c 1 3`);
      expect(device.exitCode).not.toBe(0);
      await sandbox.exec(`rm -f ${PACKAGE_CACHE_DIR}/sh`);
    });
  }
});
