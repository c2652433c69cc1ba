/**
 * Finding, creating, starting and recovering the one long-lived container of a workspace.
 */
import { createHash } from "node:crypto";
import { basename } from "node:path";
import createDebug from "debug";
import type Docker from "dockerode";
import { HARNESS_VERSION } from "../../../version.js";
import { dockerStatus, sandboxError } from "../exec/docker-errors.js";
import { runSimpleExec } from "../exec/exec-helper.js";
import { LABEL_CONFIG_HASH, LABEL_VERSION, LABEL_WORKSPACE } from "./labels.js";
import { removeContainer } from "./remove-container.js";

const log = createDebug("harness:docker");

export function containerName(workspace: string): string {
  const slug =
    basename(workspace)
      .toLowerCase()
      .replace(/[^a-z0-9_.-]+/g, "-")
      .replace(/^[-.]+/, "")
      .slice(0, 40) || "workspace";
  const hash = createHash("sha256").update(workspace).digest("hex").slice(0, 10);
  return `harness-${slug}-${hash}`;
}

export interface AcquireResult {
  container: Docker.Container;
  /** "reused", "started" (existed, was stopped) or "created". */
  acquired: "reused" | "started" | "created";
}

/**
 * Returns a running container for the workspace with exactly these settings: reuses a running one,
 * starts a stopped one, and replaces one made with other settings or another harness version.
 */
export async function acquireContainer(
  docker: Docker,
  workspace: string,
  create: Docker.ContainerCreateOptions & { Labels: Record<string, string> },
): Promise<AcquireResult> {
  const wantedHash = create.Labels[LABEL_CONFIG_HASH];
  const found = await docker
    .listContainers({ all: true, filters: { label: [`${LABEL_WORKSPACE}=${workspace}`] } })
    .catch((error: unknown) => {
      throw sandboxError("listing sandbox containers failed", error);
    });
  for (const info of found) {
    const same =
      info.Labels[LABEL_CONFIG_HASH] === wantedHash && info.Labels[LABEL_VERSION] === HARNESS_VERSION;
    const container = docker.getContainer(info.Id);
    if (same && info.State === "running") return { container, acquired: "reused" };
    if (same && (info.State === "exited" || info.State === "created")) {
      await container
        .start()
        .catch(ignoreNotModified)
        .catch((error: unknown) => {
          throw sandboxError("starting the sandbox container failed", error, info.Id);
        });
      return { container, acquired: "started" };
    }
    log("removing container %s (state %s, same settings %s)", info.Id.slice(0, 12), info.State, same);
    await removeContainer(container);
  }
  const name = containerName(workspace);
  let container: Docker.Container;
  try {
    container = await docker.createContainer({ ...create, name });
  } catch (error) {
    if (dockerStatus(error) !== 409) throw sandboxError("creating the sandbox container failed", error);
    // Another harness for the same workspace won the race, or a stray container holds the name.
    log("name %s taken; replacing it", name);
    await removeContainer(docker.getContainer(name));
    container = await docker.createContainer({ ...create, name }).catch((again: unknown) => {
      throw sandboxError("creating the sandbox container failed", again);
    });
  }
  await container.start().catch((error: unknown) => {
    throw sandboxError("starting the sandbox container failed", error, container.id);
  });
  return { container, acquired: "created" };
}

/** Waits until an exec of `true` succeeds; removes nothing, the caller decides. */
export async function waitUntilReady(
  container: Docker.Container,
  user: string,
  deadlineMs = 15_000,
): Promise<void> {
  const until = Date.now() + deadlineMs;
  let lastError: unknown;
  while (Date.now() < until) {
    try {
      await runSimpleExec(container, ["/bin/sh", "-c", "true"], user, Math.max(1000, until - Date.now()));
      return;
    } catch (error) {
      lastError = error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  throw sandboxError("the sandbox container did not become ready", lastError, container.id);
}

/**
 * Brings a container back after a command broke it: starts it if it stopped, restarts it if it
 * runs but cannot exec (pid limit exhausted, wedged). Returns what was done, for the model, or
 * "gone" when the container no longer exists and must be recreated.
 */
export async function reviveContainer(
  container: Docker.Container,
): Promise<"started" | "restarted" | "gone"> {
  let running: boolean;
  try {
    running = (await container.inspect()).State.Running;
  } catch (error) {
    if (dockerStatus(error) === 404) return "gone";
    throw sandboxError("inspecting the sandbox container failed", error, container.id);
  }
  try {
    if (running) {
      await container.restart({ t: 1 });
      return "restarted";
    }
    await container.start();
    return "started";
  } catch (error) {
    if (dockerStatus(error) === 404) return "gone";
    // Someone removed it (`harness rm`, `docker rm -f`) and the engine is still at it.
    if (dockerStatus(error) === 409 && /marked for removal|removal .*in progress/i.test(String(error))) {
      await waitUntilGone(container);
      return "gone";
    }
    throw sandboxError("restarting the sandbox container failed", error, container.id);
  }
}

/** Waits (a few seconds at most) for a container being removed to be gone, so its name is free. */
async function waitUntilGone(container: Docker.Container, deadlineMs = 10_000): Promise<void> {
  const until = Date.now() + deadlineMs;
  while (Date.now() < until) {
    try {
      await container.inspect();
    } catch (error) {
      if (dockerStatus(error) === 404) return;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function ignoreNotModified(error: unknown): void {
  if (dockerStatus(error) !== 304) throw error;
}
