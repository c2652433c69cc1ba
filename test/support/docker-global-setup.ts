/**
 * Before the Docker tests: fail fast in CI without an engine, and build the sandbox image once so no
 * single test pays (or times out on) the build.
 */
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  listHarnessContainers,
  removeHarnessContainers,
} from "../../src/sandbox/docker/container/container-registry.js";
import { ensureSandboxImage } from "../../src/sandbox/docker/container/image.js";
import { connectDocker } from "../../src/sandbox/docker/engine/docker-client.js";
import { dockerAvailable, dockerRequired } from "./docker-available.js";

export default async function setup(): Promise<(() => Promise<void>) | undefined> {
  if (!(await dockerAvailable())) {
    if (dockerRequired())
      throw new Error("Docker is required (CI or HARNESS_REQUIRE_DOCKER) but no engine answers");
    return;
  }
  // The Dockerfile's base cannot be pulled without a registry: the script builds it from Debian's
  // packages when it is missing (a no-op when present).
  execFileSync("bash", [fileURLToPath(new URL("../../scripts/build-base-image.sh", import.meta.url))], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  const docker = await connectDocker();
  // With the toolchains the egress tests drive (npm, pip, curl, go, cargo, mvn): minutes the first
  // time (docs/toolchains.md), then found by its tag.
  await ensureSandboxImage(docker, (line) => process.stderr.write(`[sandbox image] ${line}\n`));
  // Teardown: tests make a workspace (and so a container) per case and delete the workspace when
  // done; remove the containers left behind. A workspace that still exists belongs to a test still
  // running (another vitest process on the same engine): its container stays.
  return async () => {
    const prefix = join(tmpdir(), "harness-");
    const mine = (await listHarnessContainers(docker)).filter((c) => {
      const workspace = c.workspace.replace(/^copy:/, "");
      return workspace.startsWith(prefix) && !existsSync(workspace);
    });
    await removeHarnessContainers(docker, mine);
  };
}
