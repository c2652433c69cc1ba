import { describe } from "vitest";
import { DockerSandbox } from "../../src/sandbox/docker/docker-sandbox.js";
import { conformanceSuite } from "../support/conformance.js";
import { skipDocker } from "../support/docker-available.js";

/** The conformance set on the engine harness was built on: the local Docker engine with runc. */
describe.skipIf(skipDocker)("Docker with runc", () => {
  conformanceSuite("docker/runc", (workspace, extra) =>
    DockerSandbox.open({ workspace, removeOnStop: true, ...extra }),
  );
});
