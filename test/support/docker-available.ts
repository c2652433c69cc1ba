import Docker from "dockerode";

/**
 * Whether a Docker engine answers. Integration tests skip without one locally; in CI
 * (`CI` or `HARNESS_REQUIRE_DOCKER` set) a missing engine is a failure, never a silent skip.
 * Anchors: mini-swe-agent `tests/environments/test_docker.py` (`is_docker_available`).
 */
export async function dockerAvailable(): Promise<boolean> {
  try {
    await new Docker().ping();
    return true;
  } catch {
    return false;
  }
}

export function dockerRequired(): boolean {
  return Boolean(process.env["CI"] || process.env["HARNESS_REQUIRE_DOCKER"]);
}

/** For `describe.skipIf(skipDocker)`: skip only when Docker is absent *and* not required. */
export const hasDocker = await dockerAvailable();
if (!hasDocker && dockerRequired()) {
  throw new Error("Docker is required (CI or HARNESS_REQUIRE_DOCKER is set) but no engine answers a ping.");
}
export const skipDocker = !hasDocker;
