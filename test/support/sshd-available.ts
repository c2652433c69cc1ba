/**
 * Whether the ssh:// engine tests can run: Debian's sshd (scripts/ensure-sshd.sh), the ssh client
 * and ssh-keygen, and the docker CLI that runs `docker system dial-stdio` on the "remote" side.
 * Tests skip without them locally; in CI (`CI` or `HARNESS_REQUIRE_DOCKER`) a missing one is a
 * failure, never a silent skip: .ci/run installs them.
 */
import { existsSync } from "node:fs";
import { dockerRequired } from "./docker-available.js";
import { SSHD_PATH } from "./ssh-engine.js";

/** The programs the fixture needs, where Debian's packages put them (docker: docker.io or Docker's own). */
const needed: [string, string[]][] = [
  ["sshd (openssh-server)", [SSHD_PATH]],
  ["ssh (openssh-client)", ["/usr/bin/ssh"]],
  ["ssh-keygen (openssh-client)", ["/usr/bin/ssh-keygen"]],
  ["docker CLI (for 'docker system dial-stdio')", ["/usr/bin/docker", "/usr/local/bin/docker"]],
];

const missing = needed.filter(([, paths]) => !paths.some((path) => existsSync(path))).map(([name]) => name);
if (missing.length > 0 && dockerRequired()) {
  throw new Error(
    `the ssh:// engine tests need ${missing.join(", ")}: run 'bash scripts/ensure-sshd.sh' (.ci/run does)`,
  );
}

/** For `describe.skipIf(skipSsh)`. */
export const skipSsh = missing.length > 0;
