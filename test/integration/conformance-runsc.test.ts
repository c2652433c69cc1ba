import { describe } from "vitest";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import { conformanceSuite } from "../support/conformance.js";
import { runscMissing } from "../support/runsc-available.js";

/** The conformance set under gVisor (test/support/runsc-available.ts). */
describe.skipIf(runscMissing !== undefined)("Docker with gVisor (runsc)", () => {
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
