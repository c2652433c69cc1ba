import { existsSync } from "node:fs";
import Docker from "dockerode";
import { ensureSandboxImage, sandboxContextDir } from "../../src/sandbox/docker/container/image.js";
import { dockerRequired } from "./docker-available.js";

/**
 * Podman's Docker-compatible socket, as scripts/ensure-podman.sh starts it (HARNESS_PODMAN_SOCKET
 * overrides). Tests skip without it locally; in CI (`CI` or `HARNESS_REQUIRE_DOCKER`) a missing
 * socket is a failure: .ci/run installs and starts Podman.
 */
export const PODMAN_SOCKET = process.env["HARNESS_PODMAN_SOCKET"] || "/run/harness-podman/podman.sock";

async function podmanAnswers(): Promise<Docker | undefined> {
  if (!existsSync(PODMAN_SOCKET)) return undefined;
  const docker = new Docker({ socketPath: PODMAN_SOCKET });
  try {
    await docker.ping();
    return docker;
  } catch {
    return undefined;
  }
}

/** A client on Podman's socket; undefined when none answers (then `skipPodman`). */
export const podman = await podmanAnswers();
if (!podman && dockerRequired()) {
  throw new Error(
    `Podman is required in CI but nothing answers at ${PODMAN_SOCKET}: run 'bash scripts/ensure-podman.sh'`,
  );
}
export const skipPodman = podman === undefined;

/**
 * The minimal sandbox image on Podman, built by harness through the API when missing (its base must
 * be there). Minimal: the conformance set needs harness's machinery, not the toolchains, and building
 * those a second time in Podman's own store would cost minutes and gigabytes.
 */
export async function podmanSandboxImage(docker: Docker): Promise<string> {
  return ensureSandboxImage(
    docker,
    (line) => process.stderr.write(`[podman image] ${line}\n`),
    sandboxContextDir(),
    "minimal",
  );
}
