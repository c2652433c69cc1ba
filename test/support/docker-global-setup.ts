/**
 * Before the Docker tests: fail fast in CI without an engine, and build the sandbox image once so no
 * single test pays (or times out on) the build.
 */
import { connectDocker } from "../../src/sandbox/docker-client.js";
import { ensureSandboxImage } from "../../src/sandbox/image.js";
import { dockerAvailable, dockerRequired } from "./docker-available.js";

export default async function setup(): Promise<void> {
  if (!(await dockerAvailable())) {
    if (dockerRequired())
      throw new Error("Docker is required (CI or HARNESS_REQUIRE_DOCKER) but no engine answers");
    return;
  }
  const docker = await connectDocker();
  await ensureSandboxImage(docker, (line) => process.stderr.write(`[sandbox image] ${line}\n`));
}
