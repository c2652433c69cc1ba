import Docker from "dockerode";
import { describe } from "vitest";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import { runtimeProblem } from "../../src/sandbox/docker/engine/runtime-check.js";
import { conformanceSuite } from "../support/conformance.js";
import { dockerRequired, hasDocker } from "../support/docker-available.js";

/**
 * The conformance set under gVisor: Docker with Debian's runsc registered as "runsc" the way
 * scripts/ensure-runsc.sh does it. Locally it is skipped when runsc is not registered; in CI
 * (.ci/run registers it) a missing or misregistered runsc fails.
 */
async function runscProblem(): Promise<string | undefined> {
  if (!hasDocker) return "no Docker engine";
  const info = (await new Docker().info()) as {
    Runtimes?: Record<string, { path?: string; runtimeArgs?: string[] }>;
  };
  return runtimeProblem("runsc", "none", info.Runtimes ?? {});
}
const problem = await runscProblem();
if (problem !== undefined && dockerRequired()) {
  throw new Error(`gVisor is required in CI (run scripts/ensure-runsc.sh): ${problem}`);
}

describe.skipIf(problem !== undefined)("Docker with gVisor (runsc)", () => {
  conformanceSuite(
    "docker/runsc",
    (workspace, extra) => DockerSandbox.open({ workspace, removeOnStop: true, runtime: "runsc", ...extra }),
    {
      timeoutMs: 240_000,
      differences: {
        // Measured: coreutils 9.1's statx gets EINVAL for every path (rootfs, tmpfs, bind mount), also
        // with seccomp unconfined; fstatat (python3's os.stat, Node) works.
        "ls -l and stat":
          "Debian's runsc (2022-12-19) answers statx with EINVAL on this kernel (6.x), so coreutils stat and ls -l fail",
      },
    },
  );
});
