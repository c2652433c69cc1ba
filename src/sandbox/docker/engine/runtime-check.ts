/**
 * Checks an OCI runtime asked for with `--runtime` against what the engine has registered, so a
 * missing or misregistered runtime fails at open with what to do, not at container start with the
 * runtime's own message.
 */
import type Docker from "dockerode";
import { SandboxError } from "../../../errors.js";

/** One runtime as `docker info` lists it (`Runtimes`). */
export interface EngineRuntime {
  /** The runtime binary. */
  path?: string | undefined;
  /** Arguments the engine passes to it on every container. */
  runtimeArgs?: string[] | undefined;
}

/** The daemon.json entry that registers Debian's runsc so that it runs network-less containers. */
export function runscDaemonJson(name: string, path = "/usr/bin/runsc"): string {
  return JSON.stringify({ runtimes: { [name]: { path, runtimeArgs: ["--network=none"] } } });
}

/** Whether a registered runtime is gVisor: its name or binary is runsc. */
export function isRunsc(name: string, runtime: EngineRuntime): boolean {
  return /(^|\/)runsc$/.test(runtime.path ?? "") || name === "runsc";
}

/**
 * Why `runtime` cannot run harness's container with `network`, or undefined when it can. gVisor
 * registered without `--network=none` refuses a "none" container: "cannot run with network enabled
 * in root network namespace" (measured with Debian's runsc 2022-12-19).
 */
export function runtimeProblem(
  runtime: string,
  network: string,
  registered: Record<string, EngineRuntime>,
): string | undefined {
  const entry = registered[runtime];
  if (!entry) {
    const names = Object.keys(registered).sort().join(", ") || "none";
    return `the engine has no runtime '${runtime}' (registered: ${names}); register it in /etc/docker/daemon.json and reload dockerd (kill -HUP $(pidof dockerd))`;
  }
  if (
    network === "none" &&
    isRunsc(runtime, entry) &&
    !(entry.runtimeArgs ?? []).includes("--network=none")
  ) {
    return `the runtime '${runtime}' (gVisor) is registered without --network=none, so it cannot start a container with no network; register it in /etc/docker/daemon.json as ${runscDaemonJson(runtime, entry.path)} and reload dockerd (kill -HUP $(pidof dockerd))`;
  }
  return undefined;
}

/** Throws a SandboxError when the engine cannot run `runtime` with `network` (runtimeProblem). */
export async function checkRuntime(docker: Docker, runtime: string, network: string): Promise<void> {
  const info = (await docker.info()) as { Runtimes?: Record<string, EngineRuntime> };
  const problem = runtimeProblem(runtime, network, info.Runtimes ?? {});
  if (problem !== undefined) throw new SandboxError(`--runtime ${runtime}: ${problem}`);
}
