/**
 * Round 4, finding 12: devcontainer.json's `remoteUser` picked any non-root uid, and with it that
 * uid's package cache: a workspace owned by one uid wrote into another uid's cache, and a later
 * workspace of that uid read the planted file. Now remoteUser must be the workspace owner's uid,
 * refused in one line otherwise (naming the value and the fix), before the container is created
 * (before anything is built, for a numeric one). From the host: the other uid's cache volume is
 * never written (its mount point, read by the host), and its own next sandbox finds nothing there.
 */
import { chownSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadDevcontainer } from "../../../src/devcontainer/load-devcontainer.js";
import { ConfigError } from "../../../src/errors.js";
import { PACKAGE_CACHE_DIR } from "../../../src/sandbox/docker/container/container-spec.js";
import { ensureSandboxImage } from "../../../src/sandbox/docker/container/image.js";
import { DockerSandbox } from "../../../src/sandbox/docker/docker-sandbox.js";
import {
  listPackageCacheVolumes,
  removePackageCacheVolumes,
} from "../../../src/sandbox/docker/package-cache/package-cache-volume.js";
import { skipDocker } from "../../support/docker-available.js";
import { makeWorkspace } from "../../support/workspace.js";

/** Uids of this run's own, so their cache volumes are this test's. */
const OWNER_UID = 30_000 + (process.pid % 5_000);
const OTHER_UID = OWNER_UID + 5_000;
const CACHE = { maxBytes: 64 * 1024 ** 2 };

describe.skipIf(skipDocker)("adversarial: remoteUser naming another uid", { timeout: 180_000 }, () => {
  const docker = new Docker();
  let base: string;

  beforeAll(async () => {
    base = await ensureSandboxImage(docker);
  }, 120_000);

  afterAll(async () => {
    for (const uid of [OWNER_UID, OTHER_UID])
      await removePackageCacheVolumes(docker, { uid }).catch(() => {});
  });

  /** Whether a file `name` is in any of uid's cache volumes (one per workspace), as the host sees them. */
  async function inCache(uid: number, name: string): Promise<boolean> {
    for (const { name: volume } of await listPackageCacheVolumes(docker, { uid })) {
      const { Mountpoint } = await docker.getVolume(volume).inspect();
      if (existsSync(join(Mountpoint, name))) return true;
    }
    return false;
  }

  /** Opens a sandbox of a workspace owned by OWNER_UID with `json`; plants a file in the cache if it opens. */
  async function openAndPlant(json: object, dockerfile?: string): Promise<unknown> {
    using ws = makeWorkspace("harness-devc-user-");
    chownSync(ws.path, OWNER_UID, OWNER_UID);
    if (dockerfile !== undefined) {
      mkdirSync(join(ws.path, ".devcontainer"));
      writeFileSync(join(ws.path, ".devcontainer", "Dockerfile"), dockerfile);
      writeFileSync(join(ws.path, ".devcontainer", "devcontainer.json"), JSON.stringify(json));
    } else writeFileSync(join(ws.path, ".devcontainer.json"), JSON.stringify(json));
    const devcontainer = loadDevcontainer(ws.path, undefined);
    try {
      const sandbox = await DockerSandbox.open({
        workspace: ws.path,
        devcontainer,
        packageCache: CACHE,
        removeOnStop: true,
      });
      await sandbox.exec(`id -u > ${PACKAGE_CACHE_DIR}/planted; touch /workspace/written`);
      await sandbox.stop();
      return undefined;
    } catch (error) {
      return error;
    }
  }

  const refusal = (which: string) =>
    new RegExp(
      `^devcontainer\\.json: remoteUser ${which} is not the workspace's owner \\(uid ${OWNER_UID} owns .*\\).*leave remoteUser out, name the image's user with uid ${OWNER_UID}, or chown the workspace to \\d+$`,
    );

  it("a numeric remoteUser: refused, and the other uid's cache is never written", async () => {
    const error = await openAndPlant({ image: base, remoteUser: String(OTHER_UID) });
    expect(await inCache(OTHER_UID, "planted")).not.toBe(true);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(refusal(`uid ${OTHER_UID}`));

    // That uid's own next sandbox finds nothing planted in its cache.
    using theirs = makeWorkspace("harness-devc-user-");
    chownSync(theirs.path, OTHER_UID, OTHER_UID);
    await using sandbox = await DockerSandbox.open({
      workspace: theirs.path,
      packageCache: CACHE,
      removeOnStop: true,
    });
    const read = await sandbox.exec(`id -u; cat ${PACKAGE_CACHE_DIR}/planted`);
    expect(read.stdout).toBe(`${OTHER_UID}\n`);
    expect(read.exitCode).not.toBe(0);
  });

  it("containerUser, and a name from the image's /etc/passwd (nobody, 65534): refused too", async () => {
    const byContainerUser = await openAndPlant({ image: base, containerUser: String(OTHER_UID) });
    expect((byContainerUser as Error).message).toMatch(refusal(`uid ${OTHER_UID}`));
    const byName = await openAndPlant({ image: base, remoteUser: "nobody" });
    expect(await inCache(65_534, "planted")).not.toBe(true);
    expect((byName as Error).message).toMatch(refusal("'nobody' \\(uid 65534 in the image\\)"));
  });

  it("a numeric remoteUser is refused before anything is built", async () => {
    // The build would be refused for its FROM; the remoteUser line comes first.
    const error = await openAndPlant(
      { build: { dockerfile: "Dockerfile" }, remoteUser: String(OTHER_UID) },
      "FROM harness-test-not-on-the-engine:1\n",
    );
    expect((error as Error).message).toMatch(refusal(`uid ${OTHER_UID}`));
  });

  it("remoteUser of the owner's uid runs as it, with its own cache", async () => {
    const error = await openAndPlant({ image: base, remoteUser: String(OWNER_UID) });
    expect(error).toBeUndefined();
    expect(await inCache(OWNER_UID, "planted")).toBe(true);
  });
});
