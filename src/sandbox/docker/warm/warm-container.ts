/**
 * A batch task's container made ahead of the task (the warm pool, docs/batch.md): planned, created,
 * started and checked exactly as the task's own `DockerSandbox.open` would do it (container-plan.ts,
 * the same create request and config hash), then left running. When the task starts, its open finds
 * it by the workspace label and reuses it, so the task's sandbox start is a lookup. Anything that
 * differs by then (the workspace's protected paths, the image) changes the config hash, and open
 * replaces the container as it replaces any other: a warm container is never trusted beyond that.
 *
 * Only bind isolation is warmed: its mounts are fixed at create, so a container is made for one known
 * workspace. Copy isolation copies the workspace at open (a copy taken ahead would be older than the
 * task), and allowlist mode's gateway socket belongs to the run, so both start as they always did.
 */
import type Docker from "dockerode";
import { waitUntilReady } from "../container/container-lifecycle.js";
import { LABEL_WARM_POOL } from "../container/labels.js";
import { removeContainer } from "../container/remove-container.js";
import { containerRequest, planContainer } from "../container-plan.js";
import type { DockerSandboxOptions } from "../docker-sandbox-options.js";

/** A container the warm pool has ready for one task. */
export interface WarmContainer {
  /** The engine's id. */
  id: string;
  /**
   * True when the warm-up created or started it; false when it found the workspace's container
   * already running (left by `harness run`), which it leaves as it found it.
   */
  made: boolean;
  /** Removes it if the warm-up made it and no task took it; resolves either way. */
  discard(): Promise<void>;
}

/**
 * Makes the container `options` would open, running and checked; undefined when this sandbox is not
 * warmed (copy isolation, allowlist mode). `poolId` labels what it creates, so that what a batch
 * made ahead can be told from everything else. Rejects as open would (the task's own open then
 * reports the failure).
 */
export async function warmContainer(
  options: DockerSandboxOptions,
  poolId: string,
): Promise<WarmContainer | undefined> {
  if (options.egress !== undefined || (options.isolation ?? "bind") !== "bind") return undefined;
  // Its lines (a protected path it had to create) are said again by the task's own open.
  const plan = await planContainer({ ...options, onProgress: undefined }, "bind");
  if (plan === undefined) return undefined;
  const { createOptions } = containerRequest(plan, options);
  // Not part of the config hash (container-spec.ts `configHash` leaves the labels out): the task reuses it.
  const labelled = { ...createOptions, Labels: { ...createOptions.Labels, [LABEL_WARM_POOL]: poolId } };
  const { container, acquired } = await plan.isolation.acquire(labelled);
  if (acquired !== "reused") {
    try {
      // What open does after every start; open skips both for a container it reuses.
      await plan.isolation.verifyStarted();
      await waitUntilReady(container, plan.user);
    } catch (error) {
      await removeContainer(container).catch(() => {});
      throw error;
    }
  }
  return warmed(container, acquired !== "reused");
}

function warmed(container: Docker.Container, made: boolean): WarmContainer {
  return {
    id: container.id,
    made,
    discard: async () => {
      if (made) await removeContainer(container).catch(() => {});
    },
  };
}
