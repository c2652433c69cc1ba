/**
 * The engines the per-engine bench measures, each found the way harness finds an engine (an env with
 * DOCKER_HOST and friends, plus `--runtime`), or the one line saying why it is not available here.
 */

import { existsSync } from "node:fs";
import type Docker from "dockerode";
import { podmanSeccompProfilePath } from "../src/sandbox/docker/container/podman-seccomp.js";
import { connectEngine } from "../src/sandbox/docker/engine/docker-client.js";
import { engineSettings } from "../src/sandbox/docker/engine/engine-kind.js";
import { type EngineRuntime, runtimeProblem } from "../src/sandbox/docker/engine/runtime-check.js";
import { startSshEngine } from "../test/support/ssh-engine.js";
import { startTlsEngine } from "../test/support/tls-engine.js";

export interface EngineTarget {
  name: string;
  /** DOCKER_HOST (and TLS settings) for DockerSandbox.open and for the CLI child. */
  env: Record<string, string>;
  /** `runtime` for DockerSandbox.open and `--runtime` for the CLI. */
  runtime?: string;
  /** A client on this engine, for the bare exec. */
  docker: Docker;
  /** "Docker 20.10.24", "Podman 4.3.1" */
  version: string;
  close(): Promise<void>;
}

export type Probe = { target: EngineTarget } | { name: string; unavailable: string };

const LOCAL_DOCKER = process.env["DOCKER_HOST"]?.startsWith("unix://")
  ? process.env["DOCKER_HOST"]
  : "unix:///var/run/docker.sock";
const PODMAN_SOCKET = process.env["HARNESS_PODMAN_SOCKET"] || "/run/harness-podman/podman.sock";
/** A rootless Podman service's socket (scripts/ensure-podman-rootless.sh). */
const ROOTLESS_PODMAN_SOCKET =
  process.env["HARNESS_PODMAN_ROOTLESS_SOCKET"] || "/run/harness-podman-rootless/podman.sock";

const noop = async (): Promise<void> => {};

function firstLine(error: unknown): string {
  return ((error as Error).message ?? String(error)).split("\n")[0] ?? "";
}

async function versionOf(docker: Docker): Promise<string> {
  const v = (await docker.version()) as { Version: string; Components?: Array<{ Name?: string }> };
  const podman = (v.Components ?? []).some((c) => /podman/i.test(c.Name ?? ""));
  return `${podman ? "Podman" : "Docker"} ${v.Version}`;
}

async function connect(
  name: string,
  env: Record<string, string>,
  close: () => Promise<void> = noop,
  runtime?: string,
): Promise<Probe> {
  try {
    const { docker } = await connectEngine({ HOME: process.env["HOME"] ?? "/root", ...env });
    // What open would refuse after building its image (rootless Podman without limits): refuse it first.
    await engineSettings(docker, podmanSeccompProfilePath);
    if (runtime !== undefined) {
      const info = (await docker.info()) as { Runtimes?: Record<string, EngineRuntime> };
      const problem = runtimeProblem(runtime, "none", info.Runtimes ?? {});
      if (problem !== undefined) {
        await close();
        return { name, unavailable: problem };
      }
    }
    const version = await versionOf(docker);
    return { target: { name, env, docker, version, close, ...(runtime ? { runtime } : {}) } };
  } catch (error) {
    await close();
    return { name, unavailable: firstLine(error) };
  }
}

function socketProbe(name: string, socket: string, why: string): Promise<Probe> {
  if (!existsSync(socket)) return Promise.resolve({ name, unavailable: `no socket at ${socket}: ${why}` });
  return connect(name, { DOCKER_HOST: `unix://${socket}` });
}

/** Every engine the bench knows, in table order; the TLS stand-in only when the local Docker answers. */
export async function probeEngines(): Promise<Probe[]> {
  const probes: Probe[] = [];
  probes.push(await connect("docker+runc", { DOCKER_HOST: LOCAL_DOCKER }));
  probes.push(await connect("docker+runsc", { DOCKER_HOST: LOCAL_DOCKER }, noop, "runsc"));
  probes.push(
    await socketProbe("podman rootful", PODMAN_SOCKET, "start it with 'bash scripts/ensure-podman.sh'"),
  );
  probes.push(
    await socketProbe(
      "podman rootless",
      ROOTLESS_PODMAN_SOCKET,
      "start it with 'bash scripts/ensure-podman-rootless.sh'",
    ),
  );
  if ("target" in (probes[0] ?? {})) {
    try {
      // A Node TLS proxy on 127.0.0.1 in front of the local Docker socket (test/support/tls-engine.ts).
      const tls = await startTlsEngine();
      probes.push(
        await connect("docker tcp+TLS (127.0.0.1 proxy)", tls.env as Record<string, string>, tls.close),
      );
    } catch (error) {
      probes.push({ name: "docker tcp+TLS (127.0.0.1 proxy)", unavailable: firstLine(error) });
    }
    try {
      // Debian's sshd on 127.0.0.1 with a throwaway key, in front of the local engine through
      // `docker system dial-stdio` (test/support/ssh-engine.ts).
      const ssh = await startSshEngine();
      probes.push(await connect("docker over ssh:// (127.0.0.1 sshd)", { ...ssh.env }, () => ssh.close()));
    } catch (error) {
      probes.push({ name: "docker over ssh:// (127.0.0.1 sshd)", unavailable: firstLine(error) });
    }
  } else {
    probes.push({ name: "docker tcp+TLS (127.0.0.1 proxy)", unavailable: "needs the local Docker engine" });
    probes.push({
      name: "docker over ssh:// (127.0.0.1 sshd)",
      unavailable: "needs the local Docker engine",
    });
  }
  return probes;
}
