/**
 * gVisor: Docker with Debian's runsc registered as "runsc" the way scripts/ensure-runsc.sh does it.
 * Locally the tests that need it skip when it is not registered; in CI (.ci/run registers it) a
 * missing or misregistered runsc fails.
 */
import Docker from "dockerode";
import { runtimeProblem } from "../../src/sandbox/docker/engine/runtime-check.js";
import { dockerRequired, hasDocker } from "./docker-available.js";

async function runscProblem(): Promise<string | undefined> {
  if (!hasDocker) return "no Docker engine";
  const info = (await new Docker().info()) as {
    Runtimes?: Record<string, { path?: string; runtimeArgs?: string[] }>;
  };
  return runtimeProblem("runsc", "none", info.Runtimes ?? {});
}

/** Why gVisor cannot be used here; undefined when it can. */
export const runscMissing = await runscProblem();
if (runscMissing !== undefined && dockerRequired()) {
  throw new Error(`gVisor is required in CI (run scripts/ensure-runsc.sh): ${runscMissing}`);
}
