import { existsSync, readFileSync } from "node:fs";
import Docker from "dockerode";
import { dockerRequired } from "./docker-available.js";

/**
 * A rootless Podman's Docker-compatible socket, as scripts/ensure-podman-rootless.sh starts it
 * (HARNESS_PODMAN_ROOTLESS_SOCKET overrides). Tests skip without it locally; in CI (`CI` or
 * `HARNESS_REQUIRE_DOCKER`) a missing socket is a failure, never a silent skip.
 */
export const PODMAN_ROOTLESS_SOCKET =
  process.env["HARNESS_PODMAN_ROOTLESS_SOCKET"] || "/run/harness-podman-rootless/podman.sock";

async function answers(): Promise<Docker | undefined> {
  if (!existsSync(PODMAN_ROOTLESS_SOCKET)) return undefined;
  const docker = new Docker({ socketPath: PODMAN_ROOTLESS_SOCKET });
  try {
    await docker.ping();
    return docker;
  } catch {
    return undefined;
  }
}

/** A client on the rootless Podman's socket; undefined when none answers (then `skipPodmanRootless`). */
export const podmanRootless = await answers();
if (!podmanRootless && dockerRequired()) {
  throw new Error(
    `rootless Podman is required in CI but nothing answers at ${PODMAN_ROOTLESS_SOCKET}: run 'bash scripts/ensure-podman-rootless.sh' as root`,
  );
}
export const skipPodmanRootless = podmanRootless === undefined;

/** The Dockerfile's base image, which the script copies into the rootless Podman's storage. */
export const BASE_IMAGE =
  /^ARG BASE_IMAGE=(\S+)/m.exec(
    readFileSync(new URL("../../sandbox/Dockerfile", import.meta.url), "utf8"),
  )?.[1] ?? "debian:bookworm-slim";
